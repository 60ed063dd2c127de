package eventlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
)

// hexSigner signs with the hash itself, so tests can tell what it was given.
type hexSigner struct {
	calls int
	err   error
}

func (s *hexSigner) SignEvent(e *Event, hash [sha256.Size]byte) (string, error) {
	s.calls++
	if s.err != nil {
		return "", s.err
	}
	return "h:" + hex.EncodeToString(hash[:]), nil
}

func TestSignerSignsTheContentHash(t *testing.T) {
	tl := newTestLog(t)
	signer := &hexSigner{}
	tl.opt.Signer = signer
	evs, err := tl.Append(context.Background(), testAt, "ada", []Draft{
		{Type: "test.one", Subject: "a"}, {Type: "test.two", Data: map[string]int{"n": 2}}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if signer.calls != 2 {
		t.Fatalf("signer called %d times, want 2", signer.calls)
	}
	for _, e := range evs {
		sum, err := e.ContentHash()
		if err != nil {
			t.Fatal(err)
		}
		if e.Sig != "h:"+hex.EncodeToString(sum[:]) || e.ID != hex.EncodeToString(sum[:12]) {
			t.Fatalf("sig %q id %s, content hash %x", e.Sig, e.ID, sum)
		}
		// The signature is not content: the same event unsigned has the same id.
		unsigned := e
		unsigned.Sig = ""
		if id, _ := unsigned.ContentID(); id != e.ID {
			t.Fatalf("unsigned id %s, signed %s", id, e.ID)
		}
	}
	mustCheckClean(t, tl.Log)
	got := readAll(t, tl.Log)
	if len(got) != 2 || got[0].Sig != evs[0].Sig || got[1].Sig != evs[1].Sig {
		t.Fatalf("read back %+v", got)
	}
	b, _ := os.ReadFile(writerFile(t, tl.Log))
	for _, line := range bytes.SplitAfter(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\n'}) {
		if !bytes.Contains(line, []byte(`,"sig":"h:`)) || !bytes.HasSuffix(bytes.TrimSpace(line), []byte(`"}`)) {
			t.Fatalf("sig is not the last member: %s", line)
		}
	}
	var hashed []Hashed
	if err := tl.EachHashed(func(h Hashed) error { hashed = append(hashed, h); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(hashed) != 2 || hashed[1].Line != 2 || "h:"+hex.EncodeToString(hashed[1].Hash[:]) != evs[1].Sig {
		t.Fatalf("EachHashed: %+v", hashed)
	}
}

func TestSignerErrorAppendsNothing(t *testing.T) {
	tl := newTestLog(t)
	appendN(t, tl.Log, 1)
	before, _ := os.ReadFile(writerFile(t, tl.Log))
	tl.opt.Signer = &hexSigner{err: errors.New("no key")}
	if _, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "test.one"}}, AppendOptions{}); err == nil || err.Error() != "no key" {
		t.Fatalf("got %v, want the signer's error", err)
	}
	after, _ := os.ReadFile(writerFile(t, tl.Log))
	if !bytes.Equal(before, after) {
		t.Fatal("a refused append changed the file")
	}
}

// A sig written elsewhere than Encode puts it, or a line whose other
// members are not canonical, is hashed by encoding the event again: the
// rules judge the same content either way.
func TestSigAnywhereHashesTheSame(t *testing.T) {
	tl := newTestLog(t)
	tl.opt.Signer = &hexSigner{}
	evs, err := tl.Append(context.Background(), testAt, "ada", []Draft{{Type: "test.one", Subject: "s"}}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	line, _ := evs[0].Encode()
	sig := `"sig":"` + evs[0].Sig + `"`
	moved := strings.Replace(strings.Replace(string(line), ","+sig, "", 1), `{"v":1,`, `{"v":1,`+sig+`,`, 1)
	spaced := strings.Replace(string(line), ","+sig, ", "+sig, 1)
	for name, l := range map[string]string{"canonical": string(line), "moved": moved, "spaced": spaced} {
		e, sp, err := decode([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sum, ok := newRules("w").contentHash([]byte(l), e, sp)
		want, _ := evs[0].ContentHash()
		if !ok || !bytes.Equal(sum, want[:]) || e.Sig != evs[0].Sig {
			t.Errorf("%s: hash %x ok %v sig %q, want %x", name, sum, ok, e.Sig, want)
		}
	}
	// Editing the signed content is still caught; editing only the sig is
	// not the log's business (verify --signatures judges it).
	edited := strings.Replace(string(line), `"subject":"s"`, `"subject":"t"`, 1)
	e, sp, _ := decode([]byte(edited))
	if newRules("w").idMatches([]byte(edited), e, sp) {
		t.Fatal("an edited signed line passes")
	}
	resigned := strings.Replace(string(line), evs[0].Sig, "h:00", 1)
	e, sp, _ = decode([]byte(resigned))
	if !newRules("w").idMatches([]byte(resigned), e, sp) || e.Sig != "h:00" {
		t.Fatal("a changed sig changed the id")
	}
	if _, err := Decode([]byte(strings.Replace(string(line), sig, `"sig":5`, 1))); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a sig that is not a string: %v", err)
	}
}

// The merge driver keeps a signed line byte for byte, sig included.
func TestUnionKeepsSignatures(t *testing.T) {
	tl := newTestLog(t)
	tl.opt.Signer = &hexSigner{}
	appendN(t, tl.Log, 2)
	ours := fileBytes(t, tl.Log)
	theirs := append([]byte(nil), ours...)
	merged, err := Union(ours, theirs)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(merged, ours) {
		t.Fatalf("union changed signed lines:\n%s\n%s", merged, ours)
	}
}
