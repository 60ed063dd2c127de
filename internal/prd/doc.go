// Package prd reads what spool's PRD queue needs from a PRD (a markdown file
// with YAML front matter) and writes approvals into it. It does no I/O:
// bytes in, values out.
//
// A PRD carries two approval gates in its front matter, prd_approval and
// beads_approval, and its open questions in a section headed "Open
// Questions". Parse reads both, with a hash of everything but the gates'
// values; SetGate sets a gate and changes nothing else.
//
// Front matter is parsed with go.yaml.in/yaml/v3 and the body with
// github.com/yuin/goldmark (CommonMark with the GFM table, strikethrough and
// task list, see gfm).
package prd

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	yaml "go.yaml.in/yaml/v3"
)

// The front matter keys of the two gates.
const (
	PRDGateKey   = "prd_approval"
	BeadsGateKey = "beads_approval"
)

// gateKeys are the gate keys in Doc order.
var gateKeys = [2]string{PRDGateKey, BeadsGateKey}

// Doc is what Parse reads from a PRD.
type Doc struct {
	// PRDGate is the value of the front matter key prd_approval as YAML gives
	// it: a string's text, or a non-string scalar's source text (yes, true,
	// 1, null, ~). It is "" when the key is absent or has no value.
	PRDGate string
	// BeadsGate is the value of beads_approval, read as PRDGate is.
	BeadsGate string
	// OpenQuestions are the questions in the document's Open Questions
	// sections, in document order, each trimmed; nil when there are none.
	OpenQuestions []string
	// ContentHash is the hex SHA-256 of the document with the gates' values
	// left out; see Parse for exactly which bytes it covers.
	ContentHash string
}

// Approved reports whether a gate's value is the exact string "approved".
// "Approved", "APPROVED", "approved " and "yes" are not.
func Approved(v string) bool { return v == "approved" }

// FrontMatterError is a problem with a PRD's front matter. Line is 1-based in
// the file (the opening --- is line 1).
type FrontMatterError struct {
	Line int
	Msg  string
}

func (e *FrontMatterError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Parse reads a PRD.
//
// Front matter: the file starts with a line "---" (after an optional UTF-8
// BOM; blanks may follow the dashes) and the front matter runs to the next
// line that is "---" or "..." (blanks may follow too). A file that does not
// start so has no front matter, and both gates are "". Front matter that is
// never closed, is not valid YAML, holds more than one YAML document, is not
// a mapping, or repeats a key, and a gate that is not a scalar (a list, a
// mapping) or that is written with an alias, an anchor or a tag, or is set
// through a merge key (<<), are a *FrontMatterError. Only the top-level
// mapping's keys are gates.
//
// Open questions: the blocks under a heading whose text, as written, is "Open
// Questions" (ASCII letters in any case, blanks and line breaks around and
// between the two words in any number; any level, ATX or setext; only
// headings at the top level of the document, not in a list or quote) up to
// the next top-level heading of the same or a higher level (as many or fewer
// #). A heading's text is taken as written, so "## **Open Questions**" is not
// one. Each list item of a top-level list in such a section is a question (its
// text, with the text of its nested lists and quotes on further lines), and
// so is each top-level paragraph; code blocks, HTML, quotes and tables in the
// section are not. Text is plain: markup is dropped, escapes and entities are
// resolved, a soft line break is a space, a task list's [ ] is dropped. An
// empty question, and one that is just "None" or "N/A" (any case, an optional
// trailing period), does not count. Every Open Questions section counts.
//
// ContentHash is the hex SHA-256 of these bytes: the file with
//   - for each gate whose value is written on its key's line: the bytes from
//     just after the key's ':' to the end of the value as written (the blanks
//     before the value and the value with its quotes, but not the blanks or
//     comment after it) left out; a gate whose value starts on a later line
//     or runs over several lines is hashed as written;
//   - then each such gate line that is left holding only its key (unquoted,
//     maybe indented by spaces), blanks and the ':' left out whole, with its
//     line ending;
//   - and, for a file without front matter, "---" EOL "---" EOL put in front
//     (after any BOM), EOL being "\r\n" when the file's first line ends so
//     and "\n" otherwise: the front matter SetGate would create.
//
// So setting a gate with SetGate (replacing its value, adding its line, or
// adding front matter for it) never changes the hash. Nor do these, which
// only touch how gates are written: the blanks between a gate's ':' and its
// value; adding, deleting or moving within the front matter a gate line
// without a comment, or changing its indentation or blanks; adding or
// removing an empty front matter ("---" EOL "---" EOL). Any other change to
// the bytes does.
//
// Parse's errors are *FrontMatterError; any other error means a parser
// panicked, which Parse reports rather than raises.
func Parse(data []byte) (doc Doc, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = Doc{}, fmt.Errorf("prd: internal error: %v", r)
		}
	}()
	doc, _, err = parse(data)
	return doc, err
}

// parse is Parse without the recover, also giving the front matter read.
func parse(data []byte) (Doc, frontMatter, error) {
	fm, err := readFrontMatter(data)
	if err != nil {
		return Doc{}, fm, err
	}
	return Doc{PRDGate: fm.gates[0].value, BeadsGate: fm.gates[1].value,
		ContentHash: contentHash(data, &fm), OpenQuestions: openQuestions(data[fm.bodyStart:])}, fm, nil
}

// SetGate returns data with the gate key ("prd_approval" or
// "beads_approval") set to value, every other byte as it was:
//   - a gate written on one line has its value replaced (indentation,
//     spacing and a trailing comment are kept);
//   - an absent gate is added as the last line of the front matter, indented
//     as the other top-level keys, with the file's line ending;
//   - a file without front matter gets "---", "key: value", "---" at the top
//     (after any BOM), with CRLF line endings if its first line has one.
//
// The value is written plain when YAML reads it back as that same string,
// and double-quoted otherwise (so "yes" is written "yes" in quotes). If the
// gate already has the value, data comes back unchanged (copied); an absent
// gate counts as "". SetGate refuses, with a *FrontMatterError, front matter
// Parse refuses, a gate value that starts on a later line than its key or
// runs over several lines, and adding a gate to a flow mapping ({...}). The
// result always parses to value for key, the other gate, the open questions
// and the ContentHash unchanged; SetGate checks this before returning, and
// refuses (a *FrontMatterError) if it would not. A key that is not a gate
// and a value that is not UTF-8 are plain errors.
func SetGate(data []byte, key, value string) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("prd: internal error: %v", r)
		}
	}()
	gi := slices.Index(gateKeys[:], key)
	if gi < 0 {
		return nil, fmt.Errorf("prd: %q is not a gate (want %s or %s)", key, PRDGateKey, BeadsGateKey)
	}
	if !utf8.ValidString(value) {
		return nil, fmt.Errorf("prd: the value for %s is not valid UTF-8", key)
	}
	before, fm, err := parse(data)
	if err != nil {
		return nil, err
	}
	if [2]string{before.PRDGate, before.BeadsGate}[gi] == value {
		return slices.Clone(data), nil
	}
	g := &fm.gates[gi]
	switch {
	case g.present && !g.inline:
		return nil, &FrontMatterError{Line: g.line, Msg: key + ": the value is not on the key's line or runs over several lines; set it by hand"}
	case !g.present && fm.present && fm.flow:
		return nil, &FrontMatterError{Line: fm.contentLine, Msg: "the front matter is a flow mapping ({...}); add " + key + " by hand"}
	}
	var encodings []string
	if plainOK(value) {
		encodings = append(encodings, value)
	}
	encodings = append(encodings, doubleQuote(value))
	for _, enc := range encodings {
		out := setGate(data, &fm, gi, enc)
		after, err := Parse(out)
		if err != nil {
			continue
		}
		got := [2]string{after.PRDGate, after.BeadsGate}
		want := [2]string{before.PRDGate, before.BeadsGate}
		want[gi] = value
		if got == want && after.ContentHash == before.ContentHash && slices.Equal(after.OpenQuestions, before.OpenQuestions) {
			return out, nil
		}
	}
	line := 1
	if g.present {
		line = g.line
	}
	return nil, &FrontMatterError{Line: line, Msg: key + ": cannot set the value here without changing more than the value; set it by hand"}
}

// setGate writes enc (a YAML scalar as written) as gate gi's value.
func setGate(data []byte, fm *frontMatter, gi int, enc string) []byte {
	key := gateKeys[gi]
	g := &fm.gates[gi]
	var b bytes.Buffer
	b.Grow(len(data) + len(key) + len(enc) + 16)
	switch {
	case !fm.present:
		b.Write(data[:fm.bodyStart])
		b.WriteString("---" + fm.eol + key + ": " + enc + fm.eol + "---" + fm.eol)
		b.Write(data[fm.bodyStart:])
	case g.present && g.vEnd == g.colon: // "key:" with no value
		b.Write(data[:g.colon])
		b.WriteString(" " + enc)
		b.Write(data[g.colon:])
	case g.present:
		b.Write(data[:g.vStart])
		b.WriteString(enc)
		b.Write(data[g.vEnd:])
	default:
		b.Write(data[:fm.contentEnd])
		b.WriteString(strings.Repeat(" ", fm.indent) + key + ": " + enc + fm.eol)
		b.Write(data[fm.contentEnd:])
	}
	return b.Bytes()
}

// yaml11Bools are the plain scalars YAML 1.1 reads as booleans; yaml/v3
// reads them as strings, but other readers may not.
var yaml11Bools = []string{"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}

// plainOK reports whether v, written plain as a mapping value, reads back
// from YAML (1.1 or 1.2) as the string v.
func plainOK(v string) bool {
	if v == "" || slices.Contains(yaml11Bools, v) || strings.ContainsAny(v, "\r\n\u0085\u2028\u2029\ufeff") || strings.Trim(v, " \t") != v {
		return false
	}
	n, err := decodeYAML([]byte(v))
	return err == nil && n != nil && n.Kind == yaml.ScalarNode && n.Style == 0 && n.Tag == "!!str" && n.Value == v
}

// doubleQuote writes v as a YAML double-quoted scalar.
func doubleQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == 0xfeff || r >= 0xfffe && r <= 0xffff:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// frontMatter is where a document's front matter and gates are.
type frontMatter struct {
	present     bool
	flow        bool   // the top-level mapping is a flow mapping
	indent      int    // columns before the top-level keys
	eol         string // line ending for lines SetGate adds
	contentLine int    // file line of the first line inside the front matter
	contentEnd  int    // offset of the closing marker line
	bodyStart   int    // offset of the markdown body (after any BOM when there is no front matter)
	gates       [2]gate
}

// gate is one gate's key and value in the front matter.
type gate struct {
	present bool
	value   string
	line    int // file line of the key
	// inline: the value is written on the key's line and was located:
	// colon is the offset just after the key's ':', [vStart, vEnd) the value
	// as written (vStart == vEnd == colon when there is none), [lineStart,
	// lineEnd) the line with its line ending, bare that the line holds only
	// the key, the ':', the value and blanks.
	inline              bool
	colon, vStart, vEnd int
	lineStart, lineEnd  int
	bare                bool
}

var bom = []byte("\xef\xbb\xbf")

// nextLine returns the line of data starting at i, without its line ending,
// and the offset of the line after it.
func nextLine(data []byte, i int) ([]byte, int) {
	j := bytes.IndexByte(data[i:], '\n')
	if j < 0 {
		return data[i:], len(data)
	}
	return data[i : i+j], i + j + 1
}

// isMarker reports whether line (without "\n") is m followed by blanks and
// an optional "\r".
func isMarker(line []byte, m string) bool {
	line = bytes.TrimSuffix(line, []byte("\r"))
	return string(bytes.TrimRight(line, " \t")) == m
}

// firstEOL is the line ending of data's first line from i: "\r\n" if it has
// one, else "\n".
func firstEOL(data []byte, i int) string {
	line, next := nextLine(data, i)
	if next > i+len(line) && bytes.HasSuffix(line, []byte("\r")) {
		return "\r\n"
	}
	return "\n"
}

// readFrontMatter finds and checks the front matter and its gates.
func readFrontMatter(data []byte) (frontMatter, error) {
	start := 0
	if bytes.HasPrefix(data, bom) {
		start = len(bom)
	}
	fm := frontMatter{eol: firstEOL(data, start), bodyStart: start}
	open, i := nextLine(data, start)
	if !isMarker(open, "---") {
		return fm, nil
	}
	fm.present, fm.contentLine = true, 2
	contentStart := i
	for {
		if i >= len(data) {
			return fm, &FrontMatterError{Line: 1, Msg: "the front matter opened here is never closed by a --- or ... line"}
		}
		line, next := nextLine(data, i)
		if isMarker(line, "---") || isMarker(line, "...") {
			fm.contentEnd, fm.bodyStart = i, next
			break
		}
		i = next
	}
	content := data[contentStart:fm.contentEnd]
	root, err := decodeYAML(content)
	if err != nil {
		return fm, &FrontMatterError{Line: 1 + yamlErrorLine(content, err), Msg: yamlErrorMsg(err)}
	}
	if root == nil {
		return fm, nil
	}
	loc := locator{data: data, base: contentStart, content: content}
	if root.Kind != yaml.MappingNode {
		return fm, &FrontMatterError{Line: loc.fileLine(root.Line), Msg: "the front matter is " + kindName(root) + ", not a mapping of keys to values"}
	}
	if err := checkDuplicates(root, &loc, 0); err != nil {
		return fm, err
	}
	fm.flow = root.Style&yaml.FlowStyle != 0
	if len(root.Content) > 0 {
		fm.indent = root.Content[0].Column - 1
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			continue
		}
		if k.Tag == "!!merge" {
			if key := mergedGate(v, 0); key != "" {
				return fm, &FrontMatterError{Line: loc.fileLine(k.Line), Msg: key + " is set through the merge key <<; write it in the front matter itself"}
			}
			continue
		}
		gi := slices.Index(gateKeys[:], k.Value)
		if gi < 0 || k.Tag != "!!str" {
			continue
		}
		g, err := readGate(k, v, &loc, fm.flow)
		if err != nil {
			return fm, err
		}
		fm.gates[gi] = g
	}
	return fm, nil
}

// decodeYAML parses one YAML document and returns its top node, nil for an
// empty document. More than one document is an error.
func decodeYAML(content []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	var doc yaml.Node
	// A second document starts with "---"; without one, Unmarshal (which
	// reads the first document only) is enough, and faster.
	if !bytes.Contains(content, []byte("---")) {
		if err := yaml.Unmarshal(content, &doc); err != nil {
			return nil, err
		}
		return docRoot(&doc), nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(content))
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, err
	}
	var more yaml.Node
	switch err := dec.Decode(&more); err {
	case io.EOF:
	case nil:
		return nil, errors.New("the front matter holds more than one YAML document")
	default:
		return nil, err
	}
	return docRoot(&doc), nil
}

// docRoot returns a document's top node, nil for an empty document.
func docRoot(doc *yaml.Node) *yaml.Node {
	switch {
	case doc.Kind == 0:
		return nil
	case doc.Kind != yaml.DocumentNode:
		return doc
	case len(doc.Content) == 0:
		return nil
	}
	return doc.Content[0]
}

// maxErrorSearchLines and maxErrorSearchBytes bound the front matter that
// yamlErrorLine searches (it parses up to one prefix per line); past them
// the YAML parser's own line number is used.
const (
	maxErrorSearchLines = 200
	maxErrorSearchBytes = 16 << 10
)

var yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): `) })

// yamlErrorLine returns the 1-based line of content where the YAML error
// is: the line after the longest run of whole lines that parses. (yaml/v3's
// own line numbers are sometimes the line before the error, sometimes
// missing.)
func yamlErrorLine(content []byte, err error) int {
	var ends []int // ends[k] is the offset after line k+1
	for i := 0; i < len(content); {
		_, next := nextLine(content, i)
		ends = append(ends, next)
		i = next
	}
	if len(ends) > maxErrorSearchLines || len(content) > maxErrorSearchBytes {
		if m := yamlLineRE().FindStringSubmatch(err.Error()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= 1 && n <= len(ends) {
				return n
			}
		}
		return 1
	}
	for k := len(ends) - 1; k > 0; k-- {
		if _, err := decodeYAML(content[:ends[k-1]]); err == nil {
			return k + 1
		}
	}
	return 1
}

// yamlErrorMsg is err's message without yaml/v3's "yaml: line N: " prefix.
func yamlErrorMsg(err error) string {
	msg := err.Error()
	if m := yamlLineRE().FindString(msg); m != "" {
		msg = msg[len(m):]
	}
	return "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return "a scalar"
}

// checkDuplicates refuses a mapping, at any depth below n, with a scalar key
// written twice.
func checkDuplicates(n *yaml.Node, loc *locator, depth int) error {
	if depth > 1000 {
		return nil
	}
	if n.Kind == yaml.MappingNode {
		var seen map[[2]string]*yaml.Node // for long mappings; short ones are searched
		if len(n.Content) > 64 {
			seen = make(map[[2]string]*yaml.Node, len(n.Content)/2)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			var prev *yaml.Node
			if seen != nil {
				id := [2]string{k.Tag, k.Value}
				if prev = seen[id]; prev == nil {
					seen[id] = k
				}
			} else {
				for j := 0; j < i && prev == nil; j += 2 {
					if p := n.Content[j]; p.Kind == yaml.ScalarNode && p.Tag == k.Tag && p.Value == k.Value {
						prev = p
					}
				}
			}
			if prev != nil {
				return &FrontMatterError{Line: loc.fileLine(k.Line), Msg: fmt.Sprintf("the key %q is already set on line %d", k.Value, loc.fileLine(prev.Line))}
			}
		}
	}
	for _, c := range n.Content {
		if err := checkDuplicates(c, loc, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// mergedGate returns the gate key that a merge key's value v would set, or "".
func mergedGate(v *yaml.Node, depth int) string {
	if depth > 100 {
		return ""
	}
	switch v.Kind {
	case yaml.AliasNode:
		if v.Alias != nil {
			return mergedGate(v.Alias, depth+1)
		}
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if key := mergedGate(c, depth+1); key != "" {
				return key
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k := v.Content[i]
			if k.Kind == yaml.ScalarNode && slices.Contains(gateKeys[:], k.Value) {
				return k.Value
			}
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				if key := mergedGate(v.Content[i+1], depth+1); key != "" {
					return key
				}
			}
		}
	}
	return ""
}

// readGate checks a gate's value and finds where it is written.
func readGate(k, v *yaml.Node, loc *locator, flow bool) (gate, error) {
	g := gate{present: true, line: loc.fileLine(k.Line)}
	bad := func(what string) (gate, error) {
		return gate{}, &FrontMatterError{Line: loc.fileLine(v.Line), Msg: k.Value + ": the value is " + what + "; a gate is a string"}
	}
	switch {
	case v.Kind == yaml.AliasNode:
		return bad("an alias (*" + v.Value + ")")
	case v.Kind != yaml.ScalarNode:
		return bad(kindName(v))
	case v.Anchor != "":
		return bad("anchored (&" + v.Anchor + ")")
	case v.Style&yaml.TaggedStyle != 0:
		return bad("tagged " + v.Tag)
	}
	g.value = v.Value
	loc.place(&g, k, v, flow)
	return g, nil
}

// locator turns yaml/v3 positions (1-based line and column in characters,
// relative to the front matter) into file offsets and lines.
type locator struct {
	data    []byte
	base    int    // offset of content in data
	content []byte // the front matter between its markers
	starts  []int  // offsets in content of the lines as yaml/v3 counts them
}

// fileLine turns a yaml/v3 line into a file line (counting "\n").
func (l *locator) fileLine(yamlLine int) int {
	off, ok := l.offset(yamlLine, 1)
	if !ok {
		return 2 + max(yamlLine-1, 0)
	}
	return 2 + bytes.Count(l.content[:off], []byte("\n"))
}

// offset turns a yaml/v3 line and column into an offset in content.
func (l *locator) offset(line, col int) (int, bool) {
	if l.starts == nil {
		l.starts = []int{0}
		c := l.content
		for i := 0; i < len(c); i++ {
			switch c[i] {
			case '\r':
				if i+1 < len(c) && c[i+1] == '\n' {
					i++
				}
			case '\n':
			case 0xc2, 0xe2: // maybe NEL, LS or PS
				if !isBreakAt(c, i) {
					continue
				}
				_, w := utf8.DecodeRune(c[i:])
				i += w - 1
			default:
				continue
			}
			l.starts = append(l.starts, i+1)
		}
	}
	if line < 1 || line > len(l.starts) || col < 1 {
		return 0, false
	}
	off := l.starts[line-1]
	for ; col > 1; col-- {
		if off >= len(l.content) {
			return 0, false
		}
		_, w := utf8.DecodeRune(l.content[off:])
		off += w
	}
	return off, true
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

// isBreakAt reports whether a line break as yaml/v3 sees it starts at c[i].
func isBreakAt(c []byte, i int) bool {
	return c[i] == '\n' || c[i] == '\r' || bytes.HasPrefix(c[i:], []byte("\u0085")) ||
		bytes.HasPrefix(c[i:], []byte("\u2028")) || bytes.HasPrefix(c[i:], []byte("\u2029"))
}

// place sets g's offsets when v is written on k's line and can be located
// exactly; otherwise g.inline stays false.
func (l *locator) place(g *gate, k, v *yaml.Node, flow bool) {
	c := l.content
	ko, ok := l.offset(k.Line, k.Column)
	if !ok {
		return
	}
	var keyText string
	switch k.Style {
	case 0:
		keyText = k.Value
	case yaml.DoubleQuotedStyle:
		keyText = `"` + k.Value + `"`
	case yaml.SingleQuotedStyle:
		keyText = `'` + k.Value + `'`
	default:
		return
	}
	if !bytes.HasPrefix(c[ko:], []byte(keyText)) {
		return
	}
	i := ko + len(keyText)
	for i < len(c) && isBlank(c[i]) {
		i++
	}
	if i >= len(c) || c[i] != ':' {
		return // "? key" on its own line
	}
	colon := i + 1
	var vs, ve int
	if v.Tag == "!!null" && v.Value == "" && v.Style == 0 { // "key:" and nothing
		vs, ve = colon, colon
		j := colon
		for j < len(c) && isBlank(c[j]) {
			j++
		}
		if !(j == len(c) || isBreakAt(c, j) || (c[j] == '#' && j > colon) || (flow && (c[j] == ',' || c[j] == '}'))) {
			return
		}
	} else {
		if v.Line != k.Line {
			return
		}
		vo, ok := l.offset(v.Line, v.Column)
		if !ok || vo < colon || strings.Trim(string(c[colon:vo]), " \t") != "" {
			return
		}
		vs = vo
		ve, ok = scalarEnd(c, vs, v, flow)
		if !ok {
			return
		}
		// What follows on the line: blanks, then a comment, a flow
		// indicator or the end of the line.
		j := ve
		for j < len(c) && isBlank(c[j]) {
			j++
		}
		if !(j == len(c) || isBreakAt(c, j) || (c[j] == '#' && j > ve) || (flow && (c[j] == ',' || c[j] == '}'))) {
			return
		}
	}
	// The line (counting "\n" only) holding the key and value.
	ls := bytes.LastIndexByte(c[:ko], '\n') + 1
	le := len(c)
	if j := bytes.IndexByte(c[ve:], '\n'); j >= 0 {
		le = ve + j + 1
	}
	g.inline = true
	g.colon, g.vStart, g.vEnd = l.base+colon, l.base+vs, l.base+ve
	g.lineStart, g.lineEnd = l.base+ls, l.base+le
	before := bytes.TrimLeft(c[ls:colon-1], " ")
	after := bytes.TrimRight(bytes.TrimSuffix(bytes.TrimSuffix(c[ve:le], []byte("\n")), []byte("\r")), " \t")
	g.bare = k.Style == 0 && len(after) == 0 &&
		bytes.HasPrefix(before, []byte(k.Value)) && len(bytes.Trim(before[len(k.Value):], " \t")) == 0
}

// scalarEnd returns the offset just after the one-line scalar v written at
// c[vs:], and false if v is not written on that one line.
func scalarEnd(c []byte, vs int, v *yaml.Node, flow bool) (int, bool) {
	switch v.Style {
	case 0: // plain: up to a comment, the end of the line or (in flow) an indicator
		i := vs
		for i < len(c) && !isBreakAt(c, i) && !(c[i] == '#' && i > vs && isBlank(c[i-1])) &&
			!(flow && (c[i] == ',' || c[i] == '}' || c[i] == ']' || c[i] == '{' || c[i] == '[')) {
			i++
		}
		for i > vs && isBlank(c[i-1]) {
			i--
		}
		return i, string(c[vs:i]) == v.Value
	case yaml.SingleQuotedStyle:
		for i := vs + 1; i < len(c) && !isBreakAt(c, i); i++ {
			if c[i] != '\'' {
				continue
			}
			if i+1 < len(c) && c[i+1] == '\'' {
				i++
				continue
			}
			inner := strings.ReplaceAll(string(c[vs+1:i]), "''", "'")
			return i + 1, inner == v.Value
		}
	case yaml.DoubleQuotedStyle:
		for i := vs + 1; i < len(c) && !isBreakAt(c, i); i++ {
			switch c[i] {
			case '\\':
				i++
			case '"':
				tok := c[vs : i+1]
				if !bytes.ContainsRune(tok, '\\') {
					return i + 1, string(tok[1:len(tok)-1]) == v.Value
				}
				n, err := decodeYAML(tok)
				return i + 1, err == nil && n != nil && n.Kind == yaml.ScalarNode && n.Value == v.Value
			}
		}
	}
	return 0, false
}

// contentHash computes Doc.ContentHash (see Parse).
func contentHash(data []byte, fm *frontMatter) string {
	h := sha256.New()
	if !fm.present {
		h.Write(data[:fm.bodyStart])
		io.WriteString(h, "---"+fm.eol+"---"+fm.eol)
		h.Write(data[fm.bodyStart:])
		return hex.EncodeToString(h.Sum(nil))
	}
	var cuts [][2]int
	for _, g := range fm.gates {
		switch {
		case !g.inline:
		case g.bare:
			cuts = append(cuts, [2]int{g.lineStart, g.lineEnd})
		default:
			cuts = append(cuts, [2]int{g.colon, g.vEnd})
		}
	}
	slices.SortFunc(cuts, func(a, b [2]int) int { return a[0] - b[0] })
	at := 0
	for _, c := range cuts {
		if c[0] < at {
			continue
		}
		h.Write(data[at:c[0]])
		at = c[1]
	}
	h.Write(data[at:])
	return hex.EncodeToString(h.Sum(nil))
}

// md parses PRD bodies; it is made at the first body parsed, not at every
// spool command's start.
var md = sync.OnceValue(func() parser.Parser {
	// goldmark.DefaultParser's parts, without the goldmark package, whose
	// HTML renderer spool does not use.
	p := parser.NewParser(parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithInlineParsers(parser.DefaultInlineParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...))
	p.AddOptions(gfm...)
	return p
})

// openQuestions returns the open questions of a markdown body.
//
// Goldmark takes about 100 µs on an 8 KiB PRD, so the body is cut first:
// without the words "open questions" it has no such heading, and otherwise
// goldmark starts at the last line before them that must be a top-level ATX
// heading with nothing open before it (see parseStart).
func openQuestions(body []byte) []string {
	q := indexOpenQuestions(body)
	if q < 0 {
		return nil
	}
	src := body[parseStart(body, q):]
	return questionsIn(md().Parse(text.NewReader(src)), src)
}

// questionsIn collects the open questions of a parsed document.
func questionsIn(root ast.Node, src []byte) []string {
	var out []string
	add := func(t string) {
		t = strings.TrimSpace(t)
		if t != "" && !isNone(t) {
			out = append(out, t)
		}
	}
	level := 0 // the level of the Open Questions heading we are under, 0 for none
	for n := root.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if level > 0 && n.Level <= level {
				level = 0
			}
			if level == 0 && isOpenQuestions(n, src) {
				level = n.Level
			}
		case *ast.List:
			if level > 0 {
				for li := n.FirstChild(); li != nil; li = li.NextSibling() {
					var parts []string
					blockText(li, src, &parts)
					add(strings.Join(parts, "\n"))
				}
			}
		case *ast.Paragraph:
			if level > 0 {
				add(inlineText(n, src))
			}
		}
	}
	return out
}

// isNone reports whether a question is just "None" or "N/A".
func isNone(t string) bool {
	t = strings.TrimSuffix(t, ".")
	return strings.EqualFold(t, "none") || strings.EqualFold(t, "n/a")
}

// isWS is the white space allowed in and around "Open Questions".
func isWS(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// isOpenQuestions reports whether a heading's text as written is "Open
// Questions".
func isOpenQuestions(h *ast.Heading, src []byte) bool {
	var t []byte
	lines := h.Lines()
	for i := 0; i < lines.Len(); i++ {
		s := lines.At(i)
		t = append(t, s.Value(src)...)
		t = append(t, '\n')
	}
	for len(t) > 0 && isWS(t[0]) {
		t = t[1:]
	}
	for len(t) > 0 && isWS(t[len(t)-1]) {
		t = t[:len(t)-1]
	}
	if len(t) < len("open")+1+len("questions") || !asciiFold(t[:4], "open") || !asciiFold(t[len(t)-9:], "questions") {
		return false
	}
	mid := t[4 : len(t)-9]
	if len(mid) == 0 {
		return false
	}
	for _, b := range mid {
		if !isWS(b) {
			return false
		}
	}
	return true
}

// asciiFold reports whether b equals the lower-case ASCII s, ignoring ASCII
// case.
func asciiFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// indexOpenQuestions returns the offset of the first "open", white space,
// "questions" in b (ASCII case ignored), or -1. Every Open Questions heading
// contains one.
func indexOpenQuestions(b []byte) int {
	nextq, nextQ := -2, -2 // next 'q' and 'Q' at or after i; -2 unknown, -1 none
	for i := 0; i < len(b); {
		if nextq != -1 && nextq < i {
			if nextq = bytes.IndexByte(b[i:], 'q'); nextq >= 0 {
				nextq += i
			}
		}
		if nextQ != -1 && nextQ < i {
			if nextQ = bytes.IndexByte(b[i:], 'Q'); nextQ >= 0 {
				nextQ += i
			}
		}
		j := nextq
		if j < 0 || (nextQ >= 0 && nextQ < j) {
			j = nextQ
		}
		if j < 0 {
			return -1
		}
		if j+9 <= len(b) && asciiFold(b[j+1:j+9], "uestions") {
			k := j
			for k > 0 && isWS(b[k-1]) {
				k--
			}
			if k < j && k >= 4 && asciiFold(b[k-4:k], "open") {
				return k - 4
			}
		}
		i = j + 1
	}
	return -1
}

// parseStart returns where in body goldmark can start parsing and still find
// every Open Questions section as it would parsing the whole body, given that
// the first "open questions" text is at q: the start of the last line at or
// before q's line that is a top-level ATX heading (one to six # at column 0,
// then a blank or the end of the line) with nothing before it that could
// still be open there or change how later lines read. A heading at column 0
// closes every paragraph, list and quote, so what could still be open is a
// fenced code block or an HTML block, which start (at the top level) with up
// to three spaces and ``` or ~~~ or <; and link reference definitions (which
// contain "]:") change how later text reads. The heading may be on the first
// such line but not after it; when there is no such heading, parsing starts
// at 0.
func parseStart(body []byte, q int) int {
	limit := lineStart(body, q)
	if i := bytes.Index(body[:limit], []byte("]:")); i >= 0 {
		limit = lineStart(body, i)
	}
	for _, m := range []string{"```", "~~~", "<"} {
		for from := 0; from < limit; {
			i := bytes.Index(body[from:limit], []byte(m))
			if i < 0 {
				break
			}
			i += from
			ls := lineStart(body, i)
			if i-ls <= 3 && len(bytes.Trim(body[ls:i], " ")) == 0 {
				limit = ls
				break
			}
			from = i + 1
		}
	}
	for ls := limit; ; {
		line, _ := nextLine(body, ls)
		if isATXAtColumn0(line) {
			return ls
		}
		i := bytes.LastIndex(body[:ls], []byte("\n#"))
		if i < 0 {
			return 0
		}
		ls = i + 1
	}
}

// lineStart returns the offset of the start of the line holding b[i].
func lineStart(b []byte, i int) int { return bytes.LastIndexByte(b[:i], '\n') + 1 }

func isATXAtColumn0(line []byte) bool {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (n == len(line) || line[n] == ' ' || line[n] == '\t')
}

// blockText appends the text of the text blocks in n (a list item, a
// nested list or quote), one per block.
func blockText(n ast.Node, src []byte, parts *[]string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c.Kind() {
		case ast.KindParagraph, ast.KindTextBlock, ast.KindHeading:
			if t := strings.TrimSpace(inlineText(c, src)); t != "" {
				*parts = append(*parts, t)
			}
		case ast.KindList, ast.KindListItem, ast.KindBlockquote:
			blockText(c, src, parts)
		}
	}
}

// inlineText is the plain text of a text block.
func inlineText(n ast.Node, src []byte) string {
	var b []byte
	b = appendInline(b, n, src)
	return string(b)
}

func appendInline(b []byte, n ast.Node, src []byte) []byte {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(src)
			if !c.IsRaw() && bytes.ContainsAny(v, `\&`) {
				v = util.UnescapePunctuations(util.ResolveNumericReferences(util.ResolveEntityNames(v)))
			}
			b = append(b, v...)
			if c.HardLineBreak() {
				b = append(b, '\n')
			} else if c.SoftLineBreak() {
				b = append(b, ' ')
			}
		case *ast.String:
			b = append(b, c.Value...)
		case *ast.CodeSpan:
			for t := c.FirstChild(); t != nil; t = t.NextSibling() {
				if t, ok := t.(*ast.Text); ok {
					b = append(b, t.Segment.Value(src)...)
				}
			}
		case *ast.AutoLink:
			b = append(b, c.Label(src)...)
		case *ast.RawHTML, *taskBox:
		default:
			b = appendInline(b, c, src)
		}
	}
	return b
}
