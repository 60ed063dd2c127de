package prd

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/yuin/goldmark/text"
)

// parseWhole is openQuestions without the cut: goldmark over the whole body.
func parseWhole(body []byte) []string {
	return questionsIn(md().Parse(text.NewReader(body)), body)
}

func TestApproved(t *testing.T) {
	for v, want := range map[string]bool{
		"approved": true, "Approved": false, "APPROVED": false, "approved ": false,
		" approved": false, "yes": false, "true": false, "": false, "approved.": false,
	} {
		if got := Approved(v); got != want {
			t.Errorf("Approved(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestFrontMatterErrorMessage(t *testing.T) {
	if got := (&FrontMatterError{Line: 7, Msg: "bad"}).Error(); got != "line 7: bad" {
		t.Errorf("Error() = %q", got)
	}
}

func TestParseGates(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		prd, beads  string
		prdApproved bool
	}{
		{"no front matter", "# Title\n\nprd_approval: approved\n", "", "", false},
		{"empty file", "", "", "", false},
		{"both plain", "---\nprd_approval: approved\nbeads_approval: pending\n---\n# T\n", "approved", "pending", true},
		{"absent keys", "---\ntitle: x\n---\n", "", "", false},
		{"double quoted", "---\nprd_approval: \"approved\"\n---\n", "approved", "", true},
		{"single quoted", "---\nprd_approval: 'approved'\n---\n", "approved", "", true},
		{"capital", "---\nprd_approval: Approved\n---\n", "Approved", "", false},
		{"upper case", "---\nprd_approval: APPROVED\n---\n", "APPROVED", "", false},
		{"quoted trailing space", "---\nprd_approval: \"approved \"\n---\n", "approved ", "", false},
		{"yes is its text", "---\nprd_approval: yes\n---\n", "yes", "", false},
		{"true is its text", "---\nprd_approval: true\n---\n", "true", "", false},
		{"1 is its text", "---\nbeads_approval: 1\n---\n", "", "1", false},
		{"tilde is its text", "---\nprd_approval: ~\n---\n", "~", "", false},
		{"empty value", "---\nprd_approval:\nbeads_approval:   \n---\n", "", "", false},
		{"comment after value", "---\nprd_approval: approved # by ann\n---\n", "approved", "", true},
		{"comment after quoted value", "---\nprd_approval: \"approved\"  # by ann\n---\n", "approved", "", true},
		{"trailing blanks after value", "---\nprd_approval: approved   \n---\n", "approved", "", true},
		{"bom", "\ufeff---\nprd_approval: approved\n---\n", "approved", "", true},
		{"crlf", "---\r\nprd_approval: approved\r\nbeads_approval: no\r\n---\r\n# T\r\n", "approved", "no", true},
		{"dots close", "---\nprd_approval: approved\n...\nbody\n", "approved", "", true},
		{"blanks after markers", "--- \nprd_approval: approved\n---\t\n", "approved", "", true},
		{"closing at end of file", "---\nprd_approval: approved\n---", "approved", "", true},
		{"empty front matter", "---\n---\n# T\n", "", "", false},
		{"comments only", "---\n# prd_approval: approved\n---\n", "", "", false},
		{"nested key is not a gate", "---\nmeta:\n  prd_approval: approved\n---\n", "", "", false},
		{"quoted key", "---\n\"prd_approval\": approved\n---\n", "approved", "", true},
		{"flow mapping", "---\n{prd_approval: approved, beads_approval: x}\n---\n", "approved", "x", true},
		{"not front matter without first line", "\n---\nprd_approval: approved\n---\n", "", "", false},
		{"four dashes is not a marker", "----\nprd_approval: approved\n---\n", "", "", false},
		{"multi-line plain value", "---\nprd_approval: appr\n  oved\n---\n", "appr oved", "", false},
		{"block scalar", "---\nprd_approval: |\n  approved\n---\n", "approved\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if d.PRDGate != tc.prd || d.BeadsGate != tc.beads {
				t.Errorf("gates = %q, %q; want %q, %q", d.PRDGate, d.BeadsGate, tc.prd, tc.beads)
			}
			if Approved(d.PRDGate) != tc.prdApproved {
				t.Errorf("Approved(%q) = %v", d.PRDGate, !tc.prdApproved)
			}
			if len(d.ContentHash) != 64 {
				t.Errorf("ContentHash = %q", d.ContentHash)
			}
		})
	}
}

func TestParseFrontMatterErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"unterminated", "---\nprd_approval: approved\n\n# Title\n", 1, "never closed"},
		{"unterminated after bom", "\ufeff---\nprd_approval: approved\n", 1, "never closed"},
		{"only the marker", "---", 1, "never closed"},
		{"unclosed flow list", "---\ntitle: x\ntags: [a, b\nprd_approval: approved\n---\n", 3, "invalid YAML"},
		{"bad indentation", "---\ntitle: x\nprd_approval: approved\n  owner: ann\n---\n", 4, "invalid YAML"},
		{"two values on a line", "---\na: b: c\n---\n", 2, "invalid YAML"},
		{"text after quoted", "---\na: 1\nb: 'x'y\n---\n", 3, "invalid YAML"},
		{"list under a mapping", "---\na: 1\nb: 2\n- c\n---\n", 4, "invalid YAML"},
		{"tab indentation", "---\na:\n\tb: 1\n---\n", 3, "invalid YAML"},
		{"unknown anchor", "---\na: 1\n\nb: *nope\n---\n", 4, "invalid YAML"},
		{"bad token", "---\na: 1\nb: 2\nc: @x\n---\n", 4, "invalid YAML"},
		{"crlf bad line", "---\r\na: 1\r\nb: [1\r\n---\r\n", 3, "invalid YAML"},
		{"second document", "---\na: 1\n--- b\n---\n", 3, "more than one YAML document"},
		{"a list", "---\n- a\n- b\n---\n", 2, "not a mapping"},
		{"a scalar", "---\n\njust text\n---\n", 3, "not a mapping"},
		{"gate is a list", "---\ntitle: x\nprd_approval:\n  - approved\n---\n", 4, "a list"},
		{"gate is a flow list", "---\nprd_approval: [approved]\n---\n", 2, "a list"},
		{"gate is a mapping", "---\nbeads_approval: {by: ann}\n---\n", 2, "a mapping"},
		{"gate is an alias", "---\nok: &a approved\nprd_approval: *a\n---\n", 3, "alias"},
		{"gate is anchored", "---\nprd_approval: &a approved\n---\n", 2, "anchored"},
		{"gate is tagged", "---\nprd_approval: !!str approved\n---\n", 2, "tagged"},
		{"gate is tagged bool", "---\nprd_approval: !!bool approved\n---\n", 2, "tagged"},
		{"duplicate gate", "---\nprd_approval: pending\ntitle: x\nprd_approval: approved\n---\n", 4, "already set on line 2"},
		{"duplicate nested key", "---\nmeta:\n  a: 1\n  a: 2\n---\n", 4, "already set on line 3"},
		{"gate through merge", "---\nbase: &b {prd_approval: approved}\n<<: *b\n---\n", 3, "merge key"},
		{"bad yaml after bom", "\ufeff---\na: [\n---\n", 2, "invalid YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			var fe *FrontMatterError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse error = %v, want a *FrontMatterError", err)
			}
			if fe.Line != tc.line || !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("error = %q, want line %d and %q", err, tc.line, tc.msg)
			}
			if _, err := SetGate([]byte(tc.in), PRDGateKey, "approved"); !errors.As(err, &fe) {
				t.Errorf("SetGate error = %v, want a *FrontMatterError", err)
			}
		})
	}
}

func TestOpenQuestions(t *testing.T) {
	list := "\n\n- First?\n- Second?\n"
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"none", "# Title\n\nSome text.\n", nil},
		{"level 1", "# Open Questions" + list, []string{"First?", "Second?"}},
		{"level 2", "## Open Questions" + list, []string{"First?", "Second?"}},
		{"level 3", "### Open Questions" + list, []string{"First?", "Second?"}},
		{"level 4", "#### Open Questions" + list, []string{"First?", "Second?"}},
		{"level 5", "##### Open Questions" + list, []string{"First?", "Second?"}},
		{"level 6", "###### Open Questions" + list, []string{"First?", "Second?"}},
		{"seven # is not a heading", "####### Open Questions" + list, nil},
		{"setext =", "Open Questions\n==============" + list, []string{"First?", "Second?"}},
		{"setext -", "# T\n\nOpen Questions\n---" + list, []string{"First?", "Second?"}},
		{"setext over two lines", "Open\nQuestions\n---" + list, []string{"First?", "Second?"}},
		{"lower case", "## open questions" + list, []string{"First?", "Second?"}},
		{"upper case", "## OPEN QUESTIONS" + list, []string{"First?", "Second?"}},
		{"blanks around and between", "##    Open   Questions   " + list, []string{"First?", "Second?"}},
		{"closing hashes", "## Open Questions ##" + list, []string{"First?", "Second?"}},
		{"indented heading", "   ## Open Questions" + list, []string{"First?", "Second?"}},
		{"colon is another heading", "## Open Questions:" + list, nil},
		{"singular is another heading", "## Open Question" + list, nil},
		{"emphasis is another heading", "## **Open Questions**" + list, nil},
		{"longer heading", "## Other Open Questions" + list, nil},
		{"words in prose only", "We have open questions.\n\n- First?\n", nil},
		{"heading in a fence", "```\n## Open Questions\n- First?\n```\n", nil},
		{"heading in a tilde fence", "~~~md\n## Open Questions\n~~~\n\n- First?\n", nil},
		{"heading in indented code", "Text\n\n    ## Open Questions\n    - First?\n", nil},
		{"heading in an html block", "<div>\n## Open Questions\n- First?\n</div>\n", nil},
		{"heading in a quote", "> ## Open Questions\n> - First?\n", nil},
		{"heading in a list item", "- item\n\n  ## Open Questions\n\n  - First?\n", nil},
		{"fence before the real heading", "```\n## Open Questions\n- Not me\n```\n\n## Open Questions" + list, []string{"First?", "Second?"}},
		{"ends at same level", "## Open Questions\n- First?\n## Next\n- Not a question\n", []string{"First?"}},
		{"ends at higher level", "### Open Questions\n- First?\n# Next\n- Not a question\n", []string{"First?"}},
		{"ends at setext heading", "### Open Questions\n- First?\n\nNext\n----\n- Not a question\n", []string{"First?"}},
		{"continues through deeper headings", "## Open Questions\n- First?\n### Pricing\n- Second?\n#### Detail\nThird?\n## Next\n- No\n", []string{"First?", "Second?", "Third?"}},
		{"paragraphs and list items", "## Open Questions\n\nShould we X?\n\n- Or Y?\n\nAnd Z?\n", []string{"Should we X?", "Or Y?", "And Z?"}},
		{"paragraph over lines", "## Open Questions\n\nShould we\nsupport X?\n", []string{"Should we support X?"}},
		{"ordered list", "## Open Questions\n1. One?\n2. Two?\n", []string{"One?", "Two?"}},
		{"empty list items", "## Open Questions\n-\n- First?\n-   \n*\n", []string{"First?"}},
		{"nested list in item", "## Open Questions\n- Which store?\n  - SQLite\n  - files\n- Next?\n", []string{"Which store?\nSQLite\nfiles", "Next?"}},
		{"loose list", "## Open Questions\n\n- One?\n\n  More on one.\n\n- Two?\n", []string{"One?\nMore on one.", "Two?"}},
		{"none item", "## Open Questions\n- None\n", nil},
		{"none with period", "## Open Questions\n- None.\n", nil},
		{"none paragraph", "## Open Questions\n\nNone.\n", nil},
		{"n/a", "## Open Questions\n- N/A\n", nil},
		{"n/a lower with period", "## Open Questions\n- n/a.\n", nil},
		{"NONE", "## Open Questions\n- NONE\n", nil},
		{"none yet counts", "## Open Questions\n- None yet, but legal may ask.\n", []string{"None yet, but legal may ask."}},
		{"none among others", "## Open Questions\n- None\n- Real?\n", []string{"Real?"}},
		{"none twice the period", "## Open Questions\n- None..\n", []string{"None.."}},
		{"markup dropped", "## Open Questions\n- Use `foo_bar` in *v2*? See [docs](http://x) and <http://y.z>.\n", []string{"Use foo_bar in v2? See docs and http://y.z."}},
		{"escapes and entities", "## Open Questions\n- a \\*b\\* &amp; c &#35;\n", []string{"a *b* & c #"}},
		{"task list", "## Open Questions\n- [ ] Decide X\n- [x] Decided Y\n", []string{"Decide X", "Decided Y"}},
		{"hard break", "## Open Questions\n- One  \n  two\n", []string{"One\ntwo"}},
		{"code block and quote not questions", "## Open Questions\n\n```\ncode\n```\n\n> quoted\n\n    indented\n\n<div>x</div>\n\n---\n\n- Real?\n", []string{"Real?"}},
		{"table not a question", "## Open Questions\n\n| a | b |\n| - | - |\n| 1 | 2 |\n\n- Real?\n", []string{"Real?"}},
		{"several sections", "# A\n## Open Questions\n- One?\n## B\ntext\n## Open questions\n- Two?\n", []string{"One?", "Two?"}},
		{"nested open questions counted once", "## Open Questions\n- One?\n### Open Questions\n- Two?\n## B\n- No\n", []string{"One?", "Two?"}},
		{"deeper then shallower open questions", "### Open Questions\n- One?\n## Open Questions\n- Two?\n### X\n- Three?\n## Y\n- No\n", []string{"One?", "Two?", "Three?"}},
		{"link reference before", "[d]: http://x\n\n## Open Questions\n- See [d].\n", []string{"See d."}},
		{"link reference after", "## Open Questions\n- See [d].\n\n[d]: http://x\n", []string{"See d."}},
		{"crlf", "# T\r\n\r\n## Open Questions\r\n\r\n- One?\r\n- Two?\r\n", []string{"One?", "Two?"}},
		{"heading after a list and quote", "- a\n> b\n## Open Questions\n- One?\n", []string{"One?"}},
		{"lazy line is not a heading", "> quote\n## Open Questions\n- One?\n", []string{"One?"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, prefix := range []string{"", "---\ntitle: x\n---\n"} {
				d, err := Parse([]byte(prefix + tc.body))
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if !slices.Equal(d.OpenQuestions, tc.want) {
					t.Errorf("with prefix %q: OpenQuestions = %q, want %q", prefix, d.OpenQuestions, tc.want)
				}
			}
			if got := parseWhole([]byte(tc.body)); !slices.Equal(got, tc.want) {
				t.Errorf("whole-body parse = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOpenQuestionsOutsideBody(t *testing.T) {
	for _, in := range []string{
		"---\n# Open Questions\ntitle: x\n---\n- not a question\n",
		"---\nnote: |\n  ## Open Questions\n  - no\n---\n",
	} {
		d, err := Parse([]byte(in))
		if err != nil || d.OpenQuestions != nil {
			t.Errorf("Parse(%q) = %q, %v; want no questions", in, d.OpenQuestions, err)
		}
	}
	d, err := Parse([]byte("\ufeff## Open Questions\n- One?\n"))
	if err != nil || !slices.Equal(d.OpenQuestions, []string{"One?"}) {
		t.Errorf("after a BOM: %q, %v", d.OpenQuestions, err)
	}
}

func TestParseRealistic(t *testing.T) {
	data, err := os.ReadFile("testdata/realistic.md")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Should discarded operations be kept for 7 days so support can recover them?",
		"Do we need per-customer control over the 30-day window, or is one setting enough for beta?",
		"Who owns the migration test corpus once the feature ships: mobile or the sync platform team?",
	}
	if d.PRDGate != "approved" || d.BeadsGate != "pending" || !slices.Equal(d.OpenQuestions, want) {
		t.Errorf("Parse = %+v", d)
	}
	if len(data) < 8000 || len(data) > 8400 {
		t.Errorf("testdata/realistic.md is %d bytes; the benchmark wants about 8 KiB", len(data))
	}
}

func hashOf(t *testing.T, s string) string {
	t.Helper()
	d, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return d.ContentHash
}

func TestContentHash(t *testing.T) {
	base := "---\ntitle: x\nprd_approval: pending\nbeads_approval: pending # by ann\n---\n# T\n\nBody.\n"
	h := hashOf(t, base)
	same := map[string]string{
		"prd approved":     strings.Replace(base, "prd_approval: pending", "prd_approval: approved", 1),
		"prd quoted":       strings.Replace(base, "prd_approval: pending", `prd_approval: "approved "`, 1),
		"prd empty":        strings.Replace(base, "prd_approval: pending", "prd_approval:", 1),
		"prd line removed": strings.Replace(base, "prd_approval: pending\n", "", 1),
		"prd line moved":   strings.Replace(strings.Replace(base, "prd_approval: pending\n", "", 1), "title: x\n", "prd_approval: yes\ntitle: x\n", 1),
		"prd more blanks":  strings.Replace(base, "prd_approval: pending", "prd_approval:    pending   ", 1),
		"beads approved":   strings.Replace(base, "pending # by ann", "approved # by ann", 1),
		"beads quoted":     strings.Replace(base, "pending # by ann", "'x' # by ann", 1),
		"beads empty":      strings.Replace(base, "beads_approval: pending # by ann", "beads_approval: # by ann", 1),
	}
	for name, s := range same {
		if got := hashOf(t, s); got != h {
			t.Errorf("%s: hash changed", name)
		}
	}
	differ := map[string]string{
		"body":                  strings.Replace(base, "Body.", "Body!", 1),
		"body appended":         base + "\n",
		"title":                 strings.Replace(base, "title: x", "title: y", 1),
		"gate comment":          strings.Replace(base, "# by ann", "# by bob", 1),
		"blanks before comment": strings.Replace(base, "pending # by ann", "pending  # by ann", 1),
		"gate key quoted":       strings.Replace(base, "prd_approval: pending", `"prd_approval": pending`, 1),
		"closing marker":        strings.Replace(base, "---\n# T", "...\n# T", 1),
		"crlf":                  strings.ReplaceAll(base, "\n", "\r\n"),
		"bom":                   "\ufeff" + base,
		"front matter removed":  "# T\n\nBody.\n",
	}
	for name, s := range differ {
		if got := hashOf(t, s); got == h {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	// Without front matter, the hash is that of the empty front matter that
	// SetGate would start from.
	if hashOf(t, "# T\n") != hashOf(t, "---\n---\n# T\n") || hashOf(t, "# T\r\n") != hashOf(t, "---\r\n---\r\n# T\r\n") {
		t.Error("no front matter and empty front matter hash differently")
	}
	if hashOf(t, "# T\n") == hashOf(t, "# U\n") || hashOf(t, "---\n---\n---\nx: 1\n---\n") == hashOf(t, "---\nx: 1\n---\n") {
		t.Error("different documents hash the same")
	}
	// A value over several lines is hashed as written.
	multi := "---\nprd_approval: appr\n  oved\n---\n"
	if hashOf(t, multi) == hashOf(t, strings.Replace(multi, "oved", "oval", 1)) {
		t.Error("a multi-line gate value is not hashed")
	}
}

func TestLongFrontMatter(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\n")
	for i := range 300 {
		fmt.Fprintf(&b, "key%d: %d\n", i, i)
	}
	ok := b.String() + "prd_approval: approved\n---\n"
	if d, err := Parse([]byte(ok)); err != nil || d.PRDGate != "approved" {
		t.Errorf("Parse = %+v, %v", d, err)
	}
	// Past the search bounds the line is yaml/v3's own.
	_, err := Parse([]byte(b.String() + "bad: [\n---\n"))
	var fe *FrontMatterError
	if !errors.As(err, &fe) || fe.Line < 300 {
		t.Errorf("error = %v, want a line near the end", err)
	}
	_, err = Parse([]byte(b.String() + "key7: again\n---\n"))
	if !errors.As(err, &fe) || fe.Line != 302 || !strings.Contains(fe.Msg, "already set on line 9") {
		t.Errorf("error = %v, want the duplicate on line 302", err)
	}
}

func TestParseConcurrently(t *testing.T) {
	data, err := os.ReadFile("testdata/realistic.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if d, err := Parse(data); err != nil || !slices.Equal(d.OpenQuestions, want.OpenQuestions) || d.ContentHash != want.ContentHash {
					t.Errorf("Parse = %+v, %v", d, err)
				}
			}
		})
	}
	wg.Wait()
}
