package prd

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// FuzzParse checks that Parse never fails but with a *FrontMatterError (a
// panic would come back as a plain error), that cutting the body before
// goldmark finds the questions the whole body has, and that setting a gate
// keeps the hash and the questions.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/realistic.md"); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"---\nprd_approval: approved\nbeads_approval: pending # c\n---\n# T\n\n## Open Questions\n\n- One?\n- None\n",
		"\ufeff---\r\nprd_approval: 'x'\r\n---\r\nOpen Questions\r\n===\r\n\r\nWhy?\r\n",
		"---\n{prd_approval: \"a\\tb\", beads_approval: }\n...\n",
		"---\nprd_approval:\n  - x\n---\n",
		"---\na: [1\n---\n",
		"---\nprd_approval: >\n  x\n---\n",
		"# A\n```\n## Open Questions\n- no\n```\n## Open Questions\n- yes\n### Sub\n- also\n## B\n- no\n",
		"<div>\n## Open Questions\n- q\n</div>\n\n[r]: /u\n## Open questions\n- [ ] see [r]\n",
		"- a\n> b\n    c\n## Open Questions\n1. x\n   - y\n2.\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			var fe *FrontMatterError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse error is not a *FrontMatterError: %v", err)
			}
			if fe.Line < 1 {
				t.Fatalf("error line %d", fe.Line)
			}
			return
		}
		fm, err := readFrontMatter(data)
		if err != nil {
			t.Fatalf("readFrontMatter: %v", err)
		}
		body := data[fm.bodyStart:]
		if whole := parseWhole(body); !slices.Equal(d.OpenQuestions, whole) {
			t.Fatalf("OpenQuestions = %q, the whole body gives %q", d.OpenQuestions, whole)
		}
		for _, key := range gateKeys {
			out, err := SetGate(data, key, "approved")
			if err != nil {
				var fe *FrontMatterError
				if !errors.As(err, &fe) {
					t.Fatalf("SetGate error is not a *FrontMatterError: %v", err)
				}
				continue
			}
			d2, err := Parse(out)
			if err != nil {
				t.Fatalf("Parse(SetGate(%s)): %v\n%q", key, err, out)
			}
			if d2.ContentHash != d.ContentHash || !slices.Equal(d2.OpenQuestions, d.OpenQuestions) {
				t.Fatalf("SetGate(%s) changed the hash or the questions\n%q", key, out)
			}
			if g := [2]string{d2.PRDGate, d2.BeadsGate}[slices.Index(gateKeys[:], key)]; g != "approved" {
				t.Fatalf("SetGate(%s) then Parse gives %q", key, g)
			}
		}
	})
}
