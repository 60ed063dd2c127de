package prd

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// withExtension is goldmark with its own GFM extensions: what gfm stands in for.
var withExtension = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList)).Parser()

// outline is every block of a parsed document with its text as
// openQuestions reads it, tables left out.
func outline(p parser.Parser, src []byte) string {
	root := p.Parse(text.NewReader(src))
	var boxes []ast.Node
	ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if _, ok := n.(*extast.TaskCheckBox); ok && entering {
			boxes = append(boxes, n)
		}
		return ast.WalkContinue, nil
	})
	for _, n := range boxes { // the extension's box: no text, as taskBox
		n.Parent().RemoveChild(n.Parent(), n)
	}
	var b strings.Builder
	ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || n.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		if n.Kind() == extast.KindTable || n.Kind() == kindTable {
			return ast.WalkSkipChildren, nil
		}
		fmt.Fprintf(&b, "%s", n.Kind())
		switch n.Kind() {
		case ast.KindParagraph, ast.KindTextBlock, ast.KindHeading:
			fmt.Fprintf(&b, " %q", inlineText(n, src))
		}
		b.WriteByte('\n')
		return ast.WalkContinue, nil
	})
	return b.String()
}

func sameAsExtension(t *testing.T, doc string) {
	t.Helper()
	if got, want := outline(md(), []byte(doc)), outline(withExtension, []byte(doc)); got != want {
		t.Errorf("%q:\ngfm:\n%s\ngoldmark's extension:\n%s", doc, got, want)
	}
}

// gfm reads every document as goldmark's GFM extensions do.
func TestGFMAsGoldmarkExtension(t *testing.T) {
	for _, doc := range []string{
		"| a | b |\n| --- | --- |\n| 1 | 2 |\n",
		"before\n| a | b |\n|---|:-:|\nrow\n\nafter\n",
		"a | b\n--- | ---\n",
		"| a |\n| --- | --- |\n", "| a | b | c |\n| --- | --- |\n", // fewer cells are padded, more are no table
		"| a \\| b |\n| --- |\n",             // an escaped pipe
		"| `a \\| b` | c |\n| --- | --- |\n", // in a code span
		"|\n|\n", "| |\n| - |\n", "x\n| :- |\n", "x\n|-:|\n", "x\n    | - |\n", "x\n | --- | \v |\n", "x\n---\n", "x\n- | -\n",
		"x\n|:-:|:--|--:|\n", "x\n| : |\n", "x\n| -:- |\n", "one\ntwo\n| a |\n| - |\n",
		"- [ ] open\n- [x] done\n- [X] Done\n- [y] not\n- [] not\n-  [ ]  spaced\n",
		"- [ ]\n- [ ]x\n- [x]\tt\n- a [ ] b\n1. [x] n\n> - [ ] q\n- \n  [ ] later\n- [\t] tab\n",
		"~~struck~~ and ~one~ and ~~~three~~~ and a~~b~~c and ~~ spaced ~~\n",
		"*~~a~~* ~~*b*~~ ~~a ~b~ c~~ ~~unclosed\n", "\\~~x~~ `~~c~~` ~~[l](u)~~\n",
		"- ~~[ ] x~~\n- [ ] ~~y~~\n",
		"- | a |\n  | - |\n\n  [ ] foo\n", "- | a |\n  | - |\n  [ ] foo\n", "> | a |\n> | - |\n>\n> [ ] q\n",
		"## Open Questions\n\n| q | a |\n| - | - |\n| x | y |\n\n- [ ] Who?\n- ~~Gone~~ kept?\n",
	} {
		sameAsExtension(t, doc)
	}
	// Put together from the pieces the three extensions care about.
	pieces := []string{"| a | b |", "|---|---|", "| - |", ":-:|--", "a | b", "- [ ] t", "- [x] u", "  [ ] v", "~~s~~", "~t~", "~~~", "*e*", "`c|d`",
		"\\|", "x", "", "> q", "1. n", "    code", "```", "## H", "---", "| a \\| b | c |", "- | a |", "  | - |", "  [ ] w"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
			if r.IntN(3) > 0 {
				b.WriteString(" " + pieces[r.IntN(len(pieces))])
			}
			b.WriteByte('\n')
		}
		sameAsExtension(t, b.String())
	}
}

func FuzzGFMAsGoldmarkExtension(f *testing.F) {
	for _, s := range []string{"| a | b |\n| --- | --- |\n", "- [ ] t\n- ~~s~~\n", "x\n|:-:|\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		sameAsExtension(t, doc)
	})
}
