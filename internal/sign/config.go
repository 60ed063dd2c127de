package sign

import "github.com/spoolhq/spool/internal/config"

func init() {
	config.Register(
		config.Key{Name: "sign.key", Kind: config.String, Default: "",
			Help: "SSH key that signs this clone's events, as git's user.signingkey (a private key file, a .pub whose key ssh-agent holds, or key::…); " +
				"this file is shared, so a person's key goes in git config spool.signingkey, which comes first"},
		config.Key{Name: "sign.exempt", Kind: config.Strings, Default: []string{},
			Check: func(v any) error {
				for _, s := range v.([]string) {
					if _, _, err := ParseExempt(s); err != nil {
						return err
					}
				}
				return nil
			},
			Help: "the events from before signing began, \"<writer>:<seq>\" each (spool sign start records them); read from the commit that first brings .spool/allowed_signers, and changed later only by an admin's signed commit"},
		config.Key{Name: "sign.required", Kind: config.Bool, Default: false,
			Help: "every append must be signed by a key .spool/allowed_signers lists for its actor, and the pre-push hook runs verify --signatures"},
	)
}

// Settings are the signing keys read from the configuration, loaded once
// where signing starts (sign.exempt is read from the commit that brings
// .spool/allowed_signers, not from here: trust.go).
type Settings struct {
	Key      string // sign.key: this clone's signing key ("": git config's)
	Required bool   // sign.required
}

// SettingsFrom reads the signing keys.
func SettingsFrom(cfg *config.Config) Settings {
	return Settings{Key: cfg.String("sign.key"), Required: cfg.Bool("sign.required")}
}
