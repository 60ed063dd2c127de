package prd

import (
	"bytes"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// The GFM table, strikethrough and task list, as goldmark's extension
// package parses them, for what openQuestions reads: a table is no
// paragraph, struck text is its text, and a task's box is no text. The
// extension package is not used because its start-up (URL regular
// expressions for linkify, which spool does not use) cost every spool
// command half a millisecond. TestGFMAsGoldmarkExtension holds these to
// the extension's answers.
var gfm = []parser.Option{
	parser.WithParagraphTransformers(util.Prioritized(tableCutter{}, 200)),
	parser.WithInlineParsers(util.Prioritized(taskBoxParser{}, 0), util.Prioritized(strikeParser{}, 500)),
}

// tableCutter ends a paragraph where a table starts, as the extension's
// paragraph transformer does, and puts a table block in its place, which
// openQuestions passes over: the block keeps the list item's first child
// what it is with the extension (a task box is only at its start).
type tableCutter struct{}

type table struct{ ast.BaseBlock }

var kindTable = ast.NewNodeKind("PRDTable")

func (n *table) Kind() ast.NodeKind            { return kindTable }
func (n *table) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }

func (tableCutter) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := node.Lines()
	src := reader.Source()
	for i := 1; i < lines.Len(); i++ {
		delim := lines.At(i)
		cols := tableColumns(delim.Value(src))
		if cols == 0 {
			continue
		}
		if cells(lines.At(i-1), src) > cols { // fewer are padded
			return
		}
		node.Parent().InsertAfter(node.Parent(), node, &table{})
		node.Lines().SetSliced(0, i-1)
		if node.Lines().Len() == 0 {
			node.Parent().RemoveChild(node.Parent(), node)
		} else {
			last := node.Lines().At(i - 2)
			last.Stop-- // the newline
			node.Lines().Set(i-2, last)
		}
		return
	}
}

// tableColumns is the number of columns of a delimiter row (| --- | :-: |),
// 0 for a line that is not one.
func tableColumns(line []byte) int {
	if w, _ := util.IndentWidth(line, 0); w > 3 {
		return 0
	}
	allDashes := true
	for _, b := range line {
		if b != '-' {
			allDashes = false
		}
		if !(util.IsSpace(b) || b == '-' || b == '|' || b == ':') {
			return 0
		}
	}
	if allDashes {
		return 0
	}
	cols := bytes.Split(line, []byte{'|'})
	if util.IsBlank(cols[0]) {
		cols = cols[1:]
	}
	if len(cols) > 0 && util.IsBlank(cols[len(cols)-1]) {
		cols = cols[:len(cols)-1]
	}
	for _, c := range cols {
		// :?-+:? between spaces (regexp's \s: no vertical tab).
		c = bytes.Trim(c, "\t\n\f\r ")
		c = bytes.TrimPrefix(c, []byte(":"))
		c = bytes.TrimSuffix(c, []byte(":"))
		if len(c) == 0 || len(bytes.Trim(c, "-")) != 0 {
			return 0
		}
	}
	return len(cols)
}

// cells is the number of cells of a table's header row: its parts between
// pipes that no backslash escapes, without a leading and a trailing pipe.
func cells(seg text.Segment, src []byte) int {
	seg = seg.TrimLeftSpace(src)
	seg = seg.TrimRightSpace(src)
	line := seg.Value(src)
	pos, limit := 0, len(line)
	if limit > 0 && line[0] == '|' {
		pos++
	}
	if limit > 0 && line[limit-1] == '|' {
		limit--
	}
	n := 0
	for ; pos < limit; n++ {
		end := pos
		for end < limit && (line[end] != '|' || end > 0 && line[end-1] == '\\') {
			end++
		}
		pos = end + 1
	}
	return n
}

// taskBox is a task list item's [ ] or [x], which has no text.
type taskBox struct{ ast.BaseInline }

var kindTaskBox = ast.NewNodeKind("PRDTaskBox")

func (n *taskBox) Kind() ast.NodeKind                     { return kindTaskBox }
func (n *taskBox) Dump(source []byte, level int)          { ast.DumpHelper(n, source, level, nil, nil) }
func (taskBoxParser) Trigger() []byte                     { return []byte{'['} }
func (taskBoxParser) CloseBlock(ast.Node, parser.Context) {}

type taskBoxParser struct{}

// Parse takes [ ], [x] or [X], and the spaces after it, at the start of a
// list item's first block.
func (taskBoxParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	if parent.Parent() == nil || parent.Parent().FirstChild() != parent || parent.HasChildren() {
		return nil
	}
	if _, ok := parent.Parent().(*ast.ListItem); !ok {
		return nil
	}
	line, _ := block.PeekLine()
	if len(line) < 3 || line[0] != '[' || line[2] != ']' || !isRESpace(line[1]) && line[1] != 'x' && line[1] != 'X' {
		return nil
	}
	n := 3
	for n < len(line) && isRESpace(line[n]) {
		n++
	}
	block.Advance(n)
	return &taskBox{}
}

// isRESpace is regexp's \s.
func isRESpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\f' || b == '\r'
}

// strike is ~struck~ or ~~struck~~ text.
type strike struct{ ast.BaseInline }

var kindStrike = ast.NewNodeKind("PRDStrike")

func (n *strike) Kind() ast.NodeKind            { return kindStrike }
func (n *strike) Dump(source []byte, level int) { ast.DumpHelper(n, source, level, nil, nil) }

type strikeParser struct{}

func (strikeParser) Trigger() []byte                           { return []byte{'~'} }
func (strikeParser) CloseBlock(ast.Node, parser.Context)       {}
func (strikeParser) IsDelimiter(b byte) bool                   { return b == '~' }
func (strikeParser) CanOpenCloser(o, c *parser.Delimiter) bool { return o.Char == c.Char }
func (strikeParser) OnMatch(int) ast.Node                      { return &strike{} }

func (p strikeParser) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	before := block.PrecendingCharacter()
	line, segment := block.PeekLine()
	node := parser.ScanDelimiter(line, before, 1, p)
	if node == nil || node.OriginalLength > 2 || before == '~' {
		return nil
	}
	node.Segment = segment.WithStop(segment.Start + node.OriginalLength)
	block.Advance(node.OriginalLength)
	pc.PushDelimiter(node)
	return node
}
