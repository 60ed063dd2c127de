package sign

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"testing"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// One event's signature and its check, per key type: what an append and
// verify --signatures pay per event on top of the log's own work.
func BenchmarkSignEvent(b *testing.B) {
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		k := newKey(b, kind)
		hash := sha256.Sum256([]byte("event"))
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				if _, err := Sign(k.signer, NamespaceEvents, EventMessage(hash)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyEvent(b *testing.B) {
	for _, kind := range []string{"ed25519", "ecdsa", "rsa"} {
		k := newKey(b, kind)
		allowed, err := ParseAllowedSigners("a", []byte("*@example.com "+k.publicLine+"\n"))
		if err != nil {
			b.Fatal(err)
		}
		hash := sha256.Sum256([]byte("event"))
		blob, err := Sign(k.signer, NamespaceEvents, EventMessage(hash))
		if err != nil {
			b.Fatal(err)
		}
		at := time.Now()
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				key, err := Verify(blob, NamespaceEvents, EventMessage(hash))
				if err != nil {
					b.Fatal(err)
				}
				if err := allowed.Check("ada@example.com", NamespaceEvents, key, at); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyEvents reads and checks a log of 10,000 events signed
// with ed25519, on every core, as verify --signatures does.
func BenchmarkVerifyEvents(b *testing.B) {
	k := newKey(b, "ed25519")
	dir := b.TempDir()
	log := eventlog.Open(eventlog.Options{Dir: filepath.Join(dir, "events"), PrivateDir: filepath.Join(dir, "private"),
		Signer: fixedSigner{k}})
	drafts := make([]eventlog.Draft, 100)
	for i := range drafts {
		drafts[i] = eventlog.Draft{Type: "bench.done", Subject: "b", Data: map[string]int{"i": i}}
	}
	for range 100 {
		if _, err := log.Append(context.Background(), time.Now(), "ada@example.com", drafts, eventlog.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	allowed, err := ParseAllowedSigners("a", []byte("ada@example.com "+k.publicLine+"\n"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		rep := &Report{}
		if err := VerifyEvents(log, allowed, Exemption{}, rep); err != nil || rep.Signed != 10_000 {
			b.Fatalf("%v %d signed, %v", err, rep.Signed, rep.Problems)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/event")
}

// fixedSigner signs every event with one key.
type fixedSigner struct{ k testKey }

func (s fixedSigner) SignEvent(e *eventlog.Event, hash [sha256.Size]byte) (string, error) {
	blob, err := Sign(s.k.signer, NamespaceEvents, EventMessage(hash))
	return encodeSig(blob), err
}
