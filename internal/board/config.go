package board

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/spoolhq/spool/internal/config"
)

// Configuration keys (docs/configuration.md).
func init() {
	config.Register(config.Key{Name: "serve.tokens", Kind: config.Strings, Default: []string{}, Check: checkTokens,
		Help: `tokens spool serve accepts besides its own, each "SHA256HEX=actor": the token's SHA-256 in hex and whom it acts as`})
}

// Settings are spool serve's keys, read once when it starts.
type Settings struct {
	Tokens []string // serve.tokens: "SHA256HEX=actor" each (ParseTokens)
}

// SettingsFrom reads spool serve's keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{Tokens: cfg.Strings("serve.tokens")}
}

var hashRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })

func checkTokens(v any) error {
	_, err := ParseTokens(v.([]string))
	return err
}

// ParseTokens reads serve.tokens into hash → actor.
func ParseTokens(entries []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range entries {
		hash, actor, ok := strings.Cut(e, "=")
		hash, actor = strings.ToLower(strings.TrimSpace(hash)), strings.TrimSpace(actor)
		if !ok || !hashRE().MatchString(hash) || actor == "" {
			return nil, fmt.Errorf(`want "SHA256HEX=actor" (64 hex digits, then the actor), got %q`, e)
		}
		out[hash] = actor
	}
	return out, nil
}
