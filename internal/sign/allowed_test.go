package sign

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spoolhq/spool/internal/fault"
)

func TestParseAllowedSigners(t *testing.T) {
	k := newKey(t, "ed25519")
	key := k.publicLine
	for _, c := range []struct {
		name, line string
		want       Entry // Principals, Namespaces, times
		err        string
	}{
		{name: "plain", line: "ada@example.com " + key, want: Entry{Principals: "ada@example.com"}},
		{name: "comment after key", line: "ada@example.com " + key + " ada's laptop", want: Entry{Principals: "ada@example.com"}},
		{name: "patterns", line: "*@example.com,!eve@example.com " + key, want: Entry{Principals: "*@example.com,!eve@example.com"}},
		{name: "quoted principals", line: `"ada@example.com,bob@example.com" ` + key, want: Entry{Principals: "ada@example.com,bob@example.com"}},
		{name: "tabs", line: "ada@example.com\t\t" + key, want: Entry{Principals: "ada@example.com"}},
		{name: "namespaces", line: `ada@example.com namespaces="git,spool" ` + key, want: Entry{Principals: "ada@example.com", Namespaces: "git,spool"}},
		{name: "option case", line: `ada@example.com NAMESPACES="spool" ` + key, want: Entry{Principals: "ada@example.com", Namespaces: "spool"}},
		{name: "valid window UTC", line: `ada@example.com valid-after="20260101Z",valid-before="202612312359Z" ` + key,
			want: Entry{Principals: "ada@example.com", ValidAfter: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), ValidBefore: time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)}},
		{name: "valid seconds UTC", line: `ada@example.com valid-before="20261231235959UTC" ` + key,
			want: Entry{Principals: "ada@example.com", ValidBefore: time.Date(2026, 12, 31, 23, 59, 59, 0, time.UTC)}},
		{name: "no key", line: "ada@example.com", err: "no key after the principals"},
		{name: "bad key", line: "ada@example.com ssh-ed25519 AAAAnotbase64!", err: "no key I can read"},
		{name: "only a key", line: key, err: "no key I can read"},
		{name: "cert authority", line: "*@example.com cert-authority " + key, err: "cert-authority: spool does not accept certificate authorities"},
		{name: "unknown option", line: `ada@example.com no-touch-required ` + key, err: `option "no-touch-required" is not one spool knows`},
		{name: "unquoted value", line: `ada@example.com namespaces=spool ` + key, err: "must be in double quotes"},
		{name: "bad time", line: `ada@example.com valid-after="2026-01-01" ` + key, err: "valid-after: \"2026-01-01\" is not YYYYMMDD"},
		{name: "impossible time", line: `ada@example.com valid-after="20261341" ` + key, err: "is not a date and time"},
		{name: "open quote", line: `"ada@example.com ` + key, err: "quote is not closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := ParseAllowedSigners("allowed_signers", []byte("# team keys\n\n"+c.line+"\n"))
			if c.err != "" {
				var le *LineError
				if !errors.As(err, &le) || le.Line != 3 || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want line 3: %s", err, c.err)
				}
				if f := fault.Classify(err); f.Code != "allowed_signers_invalid" || f.Fields["line"] != 3 {
					t.Fatalf("classified as %s %v", f.Code, f.Fields)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Entries) != 1 {
				t.Fatalf("%d entries", len(a.Entries))
			}
			e := a.Entries[0]
			if e.Line != 3 || e.Principals != c.want.Principals || e.Namespaces != c.want.Namespaces ||
				!e.ValidAfter.Equal(c.want.ValidAfter) || !e.ValidBefore.Equal(c.want.ValidBefore) ||
				!bytes.Equal(e.Key.Marshal(), k.signer.PublicKey().Marshal()) {
				t.Fatalf("got %+v, want %+v", e, c.want)
			}
		})
	}
}

func TestAllowedSignersCheck(t *testing.T) {
	ada, bob := newKey(t, "ed25519"), newKey(t, "ecdsa")
	a, err := ParseAllowedSigners(".spool/allowed_signers", []byte(strings.Join([]string{
		"ada@example.com " + ada.publicLine,
		`*@ops.example.com,!intern@ops.example.com namespaces="spool" ` + bob.publicLine,
		`bob@example.com valid-after="20260101Z",valid-before="20261231Z" ` + bob.publicLine,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	in2026 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		principal, namespace string
		key                  testKey
		at                   time.Time
		why                  string // "" allowed
	}{
		{"ada@example.com", "spool", ada, in2026, ""},
		{"ada@example.com", "git", ada, in2026, ""},
		{"bob@example.com", "spool", ada, in2026, "is not in .spool/allowed_signers for bob@example.com"},
		{"ada@example.com", "spool", bob, in2026, "is not in .spool/allowed_signers for ada@example.com"},
		{"joe@ops.example.com", "spool", bob, in2026, ""},
		{"joe@ops.example.com", "git", bob, in2026, `.spool/allowed_signers:2 lists the key for joe@ops.example.com, but not for namespace git (namespaces="spool")`},
		{"intern@ops.example.com", "spool", bob, in2026, "is not in"},
		{"bob@example.com", "git", bob, in2026, ""},
		{"bob@example.com", "git", bob, time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), ":3 lists the key for bob@example.com, but only from 2026-01-01T00:00:00Z"},
		{"bob@example.com", "git", bob, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), ":3 lists the key for bob@example.com, but only until 2026-12-31T00:00:00Z"},
		{"", "spool", ada, in2026, "is not in"},
	} {
		err := a.Check(c.principal, c.namespace, c.key.signer.PublicKey(), c.at)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s %s %s: %v", c.principal, c.namespace, c.key.fingerprint, err)
		case c.why != "" && (err == nil || !strings.Contains(err.Error(), c.why)):
			t.Errorf("%s %s: got %v, want %q", c.principal, c.namespace, err, c.why)
		}
	}
}

func TestMatchList(t *testing.T) {
	for _, c := range []struct {
		s, list string
		want    int
	}{
		{"ada@example.com", "ada@example.com", 1},
		{"ada@example.com", "bob@example.com,ada@example.com", 1},
		{"ada@example.com", "*@example.com", 1},
		{"ada@example.com", "?da@example.com", 1},
		{"ada@example.com", "??a@*.com", 1},
		{"ada@example.com", "*", 1},
		{"ada@example.com", "*@example.org", 0},
		{"ada@example.com", "ADA@example.com", 0}, // case matters, as in ssh-keygen
		{"ada@example.com", "*@example.com,!ada@*", -1},
		{"ada@example.com", "!bob@*", 0},
		{"", "*", 1},
		{"", "?", 0},
		{"a*b", "a*b", 1},
		{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "*a*a*a*a*a*a*a*a*a*a*a*b", 0},
		{"abcabd", "*ab?", 1},
		{"abcabd", "*abc", 0},
		{"ada", "ada,", 1},
	} {
		if got := matchList(c.s, c.list); got != c.want {
			t.Errorf("matchList(%q, %q) = %d, want %d", c.s, c.list, got, c.want)
		}
	}
}

// ssh-keygen -Y verify and Check agree on who may sign with which key,
// options included (times in UTC, which both read the same everywhere).
func TestAllowedSignersAgreesWithSSHKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("no ssh-keygen on PATH")
	}
	k := newKey(t, "ed25519")
	dir := t.TempDir()
	file := strings.Join([]string{
		"# a comment",
		`*@example.com,!eve@example.com namespaces="spool,ci-*" ` + k.publicLine,
		`"ops@example.org" valid-before="20200101Z" ` + k.publicLine,
		`late@example.org valid-after="29990101000000Z" ` + k.publicLine,
	}, "\n") + "\n"
	allowedPath := filepath.Join(dir, "allowed_signers")
	write(t, allowedPath, file)
	a, err := ParseAllowedSigners("allowed_signers", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("m")
	for _, principal := range []string{"ada@example.com", "eve@example.com", "ops@example.org", "late@example.org", "x@example.net"} {
		for _, ns := range []string{"spool", "git", "ci-nightly"} {
			blob, err := Sign(k.signer, ns, msg)
			if err != nil {
				t.Fatal(err)
			}
			sigFile := filepath.Join(dir, "sig")
			write(t, sigFile, Armor(blob))
			cmd := exec.Command(keygen, "-Y", "verify", "-f", allowedPath, "-I", principal, "-n", ns, "-s", sigFile)
			cmd.Stdin = bytes.NewReader(msg)
			out, err := cmd.CombinedOutput()
			theirs := err == nil
			ours := a.Check(principal, ns, k.signer.PublicKey(), time.Now()) == nil
			if theirs != ours {
				t.Errorf("%s in %s: ssh-keygen says %v (%s), spool says %v", principal, ns, theirs, bytes.TrimSpace(out), ours)
			}
		}
	}
}

func FuzzParseAllowedSigners(f *testing.F) {
	k := newKey(f, "ed25519")
	f.Add("ada@example.com " + k.publicLine)
	f.Add(`"a b",c namespaces="git",valid-after="20260101Z" ` + k.publicLine + " comment")
	f.Add("# only a comment\n\n")
	f.Add(`x cert-authority ` + k.publicLine)
	f.Add(`x valid-before="20261231235959UTC",namespaces="*" ` + k.publicLine + "\r\n" + "y " + k.publicLine)
	f.Fuzz(func(t *testing.T, data string) {
		a, err := ParseAllowedSigners("f", []byte(data))
		if err != nil {
			var le *LineError
			if a != nil || !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v with %v", err, a)
			}
			return
		}
		for _, e := range a.Entries {
			if e.Key == nil || e.Principals == "" || e.Line < 1 {
				t.Fatalf("entry %+v", e)
			}
			// Check never panics on what the parser accepted.
			_ = a.Check(e.Principals, "spool", e.Key, time.Now())
		}
	})
}
