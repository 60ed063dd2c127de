package prd

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSetGate(t *testing.T) {
	for _, tc := range []struct {
		name, in, key, value, want string
	}{
		{"replace", "---\ntitle: x\nprd_approval: pending\n---\n# T\n", PRDGateKey, "approved",
			"---\ntitle: x\nprd_approval: approved\n---\n# T\n"},
		{"replace keeps comment and spacing", "---\nprd_approval:   pending   # by ann\nbeads_approval: no\n---\n", PRDGateKey, "approved",
			"---\nprd_approval:   approved   # by ann\nbeads_approval: no\n---\n"},
		{"replace quoted", "---\nprd_approval: \"pending\" # q\n---\n", PRDGateKey, "approved",
			"---\nprd_approval: approved # q\n---\n"},
		{"replace single quoted with quote", "---\nprd_approval: 'it''s'\n---\n", PRDGateKey, "approved",
			"---\nprd_approval: approved\n---\n"},
		{"replace the other gate", "---\nprd_approval: approved\nbeads_approval: pending\n---\n", BeadsGateKey, "approved",
			"---\nprd_approval: approved\nbeads_approval: approved\n---\n"},
		{"replace empty value", "---\nprd_approval:\ntitle: x\n---\n", PRDGateKey, "approved",
			"---\nprd_approval: approved\ntitle: x\n---\n"},
		{"replace empty value with comment", "---\nprd_approval:   # later\n---\n", PRDGateKey, "approved",
			"---\nprd_approval: approved   # later\n---\n"},
		{"replace indented mapping", "---\n  title: x\n  prd_approval: pending\n---\n", PRDGateKey, "approved",
			"---\n  title: x\n  prd_approval: approved\n---\n"},
		{"replace in flow mapping", "---\n{prd_approval: pending, title: x}\n---\n", PRDGateKey, "approved",
			"---\n{prd_approval: approved, title: x}\n---\n"},
		{"replace crlf", "---\r\nprd_approval: pending\r\n---\r\n# T\r\n", PRDGateKey, "approved",
			"---\r\nprd_approval: approved\r\n---\r\n# T\r\n"},
		{"replace with dots closing", "---\nprd_approval: pending\n...\n", PRDGateKey, "approved",
			"---\nprd_approval: approved\n...\n"},
		{"insert", "---\ntitle: x\nowner: ann\n---\n# T\n", PRDGateKey, "approved",
			"---\ntitle: x\nowner: ann\nprd_approval: approved\n---\n# T\n"},
		{"insert after a list and comment", "---\ntags:\n  - a\n# end\n---\n", BeadsGateKey, "approved",
			"---\ntags:\n  - a\n# end\nbeads_approval: approved\n---\n"},
		{"insert after block scalar", "---\nnote: |\n  text\n---\n", PRDGateKey, "approved",
			"---\nnote: |\n  text\nprd_approval: approved\n---\n"},
		{"insert indented", "---\n  title: x\n---\n", PRDGateKey, "approved",
			"---\n  title: x\n  prd_approval: approved\n---\n"},
		{"insert crlf", "---\r\ntitle: x\r\n---\r\n# T\r\n", BeadsGateKey, "approved",
			"---\r\ntitle: x\r\nbeads_approval: approved\r\n---\r\n# T\r\n"},
		{"insert into empty front matter", "---\n---\nbody\n", PRDGateKey, "approved",
			"---\nprd_approval: approved\n---\nbody\n"},
		{"insert with closing at end of file", "---\ntitle: x\n---", PRDGateKey, "approved",
			"---\ntitle: x\nprd_approval: approved\n---"},
		{"create front matter", "# T\n\nBody.\n", PRDGateKey, "approved",
			"---\nprd_approval: approved\n---\n# T\n\nBody.\n"},
		{"create front matter crlf", "# T\r\n\r\nBody.\r\n", BeadsGateKey, "approved",
			"---\r\nbeads_approval: approved\r\n---\r\n# T\r\n\r\nBody.\r\n"},
		{"create front matter after bom", "\ufeff# T\n", PRDGateKey, "approved",
			"\ufeff---\nprd_approval: approved\n---\n# T\n"},
		{"create front matter in empty file", "", PRDGateKey, "approved",
			"---\nprd_approval: approved\n---\n"},
		{"create front matter before four dashes", "----\nx\n", PRDGateKey, "approved",
			"---\nprd_approval: approved\n---\n----\nx\n"},
		{"yes is quoted", "---\nprd_approval: no\n---\n", PRDGateKey, "yes",
			"---\nprd_approval: \"yes\"\n---\n"},
		{"mapping-like value is quoted", "---\nprd_approval: x\n---\n", PRDGateKey, "a: b",
			"---\nprd_approval: \"a: b\"\n---\n"},
		{"comment-like value is quoted", "---\nprd_approval: x\n---\n", PRDGateKey, "ok # really",
			"---\nprd_approval: \"ok # really\"\n---\n"},
		{"trailing space is quoted", "---\nprd_approval: x\n---\n", PRDGateKey, "approved ",
			"---\nprd_approval: \"approved \"\n---\n"},
		{"quotes and newline escaped", "---\nprd_approval: x\n---\n", PRDGateKey, "say \"hi\"\\\n",
			"---\nprd_approval: \"say \\\"hi\\\"\\\\\\u000a\"\n---\n"},
		{"empty value is quoted", "---\nprd_approval: x\n---\n", PRDGateKey, "",
			"---\nprd_approval: \"\"\n---\n"},
		{"unicode plain", "---\nprd_approval: x\n---\n", PRDGateKey, "genehmigt ✓",
			"---\nprd_approval: genehmigt ✓\n---\n"},
		{"same value unchanged", "---\nprd_approval: \"approved\"  # x\n---\n", PRDGateKey, "approved",
			"---\nprd_approval: \"approved\"  # x\n---\n"},
		{"absent and empty unchanged", "# T\n", BeadsGateKey, "",
			"# T\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetGate([]byte(tc.in), tc.key, tc.value)
			if err != nil {
				t.Fatalf("SetGate: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("SetGate =\n%q\nwant\n%q", got, tc.want)
			}
			checkSet(t, []byte(tc.in), got, tc.key, tc.value)
		})
	}
}

func TestSetGateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
	}{
		{"folded value", "---\ntitle: x\nprd_approval: >\n  approved\n---\n", 3},
		{"literal value", "---\nprd_approval: |-\n  pending\n---\n", 2},
		{"plain value over two lines", "---\nprd_approval: pend\n  ing\n---\n", 2},
		{"quoted value over two lines", "---\nprd_approval: \"pend\n  ing\"\n---\n", 2},
		{"value on the next line", "---\nprd_approval:\n  pending\n---\n", 2},
		{"explicit key", "---\n? prd_approval\n: pending\n---\n", 2},
		{"insert into flow mapping", "---\n{title: x}\n---\n", 2},
		{"invalid yaml", "---\ntitle: [x\n---\n", 2},
		{"unterminated", "---\ntitle: x\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := SetGate([]byte(tc.in), PRDGateKey, "approved")
			var fe *FrontMatterError
			if !errors.As(err, &fe) || fe.Line != tc.line {
				t.Fatalf("SetGate = %q, %v; want a *FrontMatterError on line %d", out, err, tc.line)
			}
		})
	}
	for _, tc := range []struct{ key, value string }{
		{"title", "approved"},
		{"PRD_APPROVAL", "approved"},
		{PRDGateKey, "bad \xff utf-8"},
	} {
		_, err := SetGate([]byte("---\ntitle: x\n---\n"), tc.key, tc.value)
		var fe *FrontMatterError
		if err == nil || errors.As(err, &fe) {
			t.Errorf("SetGate(%q, %q) error = %v, want a plain error", tc.key, tc.value, err)
		}
	}
}

// checkSet checks what SetGate promises: after setting key to value, Parse
// gives value for key, the other gate, the questions and the hash as they
// were.
func checkSet(t *testing.T, in, out []byte, key, value string) {
	t.Helper()
	before, err := Parse(in)
	if err != nil {
		t.Fatalf("Parse(before): %v", err)
	}
	after, err := Parse(out)
	if err != nil {
		t.Fatalf("Parse(after): %v\n%q", err, out)
	}
	want := before
	if key == PRDGateKey {
		want.PRDGate = value
	} else {
		want.BeadsGate = value
	}
	if after.PRDGate != want.PRDGate || after.BeadsGate != want.BeadsGate {
		t.Errorf("gates after = %q, %q; want %q, %q\n%q", after.PRDGate, after.BeadsGate, want.PRDGate, want.BeadsGate, out)
	}
	if after.ContentHash != before.ContentHash {
		t.Errorf("ContentHash changed\nbefore %q\nafter  %q", in, out)
	}
	if !slices.Equal(after.OpenQuestions, before.OpenQuestions) {
		t.Errorf("OpenQuestions = %q, want %q", after.OpenQuestions, before.OpenQuestions)
	}
}

// TestSetGateProperty sets each gate to a range of values in a range of
// documents, and each result to another value.
func TestSetGateProperty(t *testing.T) {
	realistic, err := os.ReadFile("testdata/realistic.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{
		string(realistic),
		strings.ReplaceAll(string(realistic), "\n", "\r\n"),
		"",
		"# T\n\n## Open Questions\n- One?\n",
		"\ufeff# T\r\n",
		"---\n---\n",
		"---\ntitle: x\n...\nbody",
		"---\nprd_approval: pending\nbeads_approval: 'x'   # c\n---\n",
		"---\nprd_approval:\nbeads_approval:\n---\n",
		"---\n  a: 1\n  prd_approval: \"p\"\n---\n",
		"---\n{prd_approval: p, beads_approval: q}\n---\n",
		"---\n{\"prd_approval\":\"p\",\"beads_approval\":\"q\"}\n---\n",
		"---\nprd_approval: yes\nbeads_approval: ~\nlist:\n  - a\n---\n## Open Questions\n- q\n",
		"---\nprd_approval: \"a\\tb\"\n---\n",
		"---\nprd_approval: ünïcödé\nbeads_approval: 'it''s'\n---\n",
	}
	values := []string{"approved", "pending", "", "yes", "Approved", "approved ", " x", "a: b", "x # y", "- x",
		"[x]", "{x}", "*x", "&x", "!x", "%x", "@x", "`x", "'x'", "\"x\"", "a\nb", "a\r\nb", "tab\there",
		"\x00\x01\x7f", "\u0085\u2028\ufeff", "ünïcödé ✓", "---", "...", "#", "x,y", "null", "~", "0x10"}
	for _, d := range docs {
		for _, key := range gateKeys {
			for _, v := range values {
				out, err := SetGate([]byte(d), key, v)
				if err != nil {
					t.Errorf("SetGate(%q, %s, %q): %v", d, key, v, err)
					continue
				}
				checkSet(t, []byte(d), out, key, v)
				out2, err := SetGate(out, key, "approved")
				if err != nil {
					t.Errorf("SetGate again (%q, %s): %v", out, key, err)
					continue
				}
				checkSet(t, out, out2, key, "approved")
			}
		}
	}
}
