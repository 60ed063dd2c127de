package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spoolhq/spool/internal/durable"
)

// Overlayer is an amortized projection (Spec.Amortize) whose changes since
// the snapshot it was loaded from can be saved on their own: an overlay,
// <name>.over beside the snapshot. A save that is put off writes one once
// Spec.Overlay events are unsaved, and the next command loads it over the
// snapshot, so it catches up on the events since the overlay rather than
// on all since the snapshot: at 100,000 tasks, a snapshot takes a second
// to write, an overlay of the tasks changed since a few milliseconds.
type Overlayer interface {
	// WriteOverlay writes what changed since the snapshot was loaded, an
	// overlay loaded over it included.
	WriteOverlay(w io.Writer) error
	// UnmarshalOverlay applies what WriteOverlay wrote to a projection
	// just loaded from the same snapshot: all of it, or nothing and an
	// error. It may keep b.
	UnmarshalOverlay(b []byte) error
}

// overlayHead is an overlay's first line: the checkpoint of the state the
// snapshot and the overlay make, and which snapshot it goes over. What
// WriteOverlay wrote follows it, then the CRC-32 (IEEE, little-endian) of
// all that: written as it is made, the overlay is never whole in memory.
type overlayHead struct {
	Format     int        `json:"format"` // overlayFormat
	Base       string     `json:"base"`   // baseOf the snapshot's checkpoint line
	Checkpoint Checkpoint `json:"checkpoint"`
}

// overlayFormat is the overlay's own version, beside its projection's
// (Spec.Version, in the checkpoint): overlays of another are passed over.
const overlayFormat = 1

// baseOf names a snapshot by its checkpoint line: two snapshots with the
// same line folded the same events, so their states are the same.
func baseOf(head []byte) string {
	sum := sha256.Sum256(head)
	return hex.EncodeToString(sum[:16])
}

func (en *Engine) overlayPath(name string) string {
	return filepath.Join(en.StateDir, name+".over")
}

// overlayDue reports whether a save that is put off writes an overlay.
// Only a state loaded from the snapshot on disk has one to write: once a
// view saved its snapshot, its projection's changes are still counted
// from the snapshot it was loaded from (base is then "").
func (it *item) overlayDue() bool {
	_, ok := it.proj.(Overlayer)
	return ok && it.spec.Overlay > 0 && it.base != "" && it.cp.Events-it.overlaid >= it.spec.Overlay
}

// loadOverlay puts the overlay of the snapshot it was just loaded from
// over it, if there is one and it is whole. It is a cache: any overlay
// that does not hold is passed over.
func (en *Engine) loadOverlay(it *item) {
	o, ok := it.proj.(Overlayer)
	if !ok || it.spec.Overlay <= 0 {
		return
	}
	b, err := os.ReadFile(en.overlayPath(it.spec.Name))
	if err != nil {
		return
	}
	n := len(b) - crc32.Size
	if n < 0 || crc32.ChecksumIEEE(b[:n]) != binary.LittleEndian.Uint32(b[n:]) {
		return
	}
	head, body, _ := bytes.Cut(b[:n], []byte{'\n'})
	var oh overlayHead
	if json.Unmarshal(head, &oh) != nil || oh.Format != overlayFormat || oh.Base != it.base || !oh.Checkpoint.valid(it.spec) {
		return
	}
	if o.UnmarshalOverlay(body) != nil {
		return
	}
	it.cp, it.overlaid = oh.Checkpoint, oh.Checkpoint.Events
}

// writeOverlay writes the overlay of it. It is a cache, as its checksum says
// whether it is whole: not fsynced, and the temp file is in tmp, which the
// next save sweeps if a crash leaves it there.
func (en *Engine) writeOverlay(it *item, tmp string) error {
	if head, ok := en.snapshotHead(it.spec.Name); !ok || baseOf(head) != it.base {
		// Another process saved the snapshot (spool replay, while this
		// view was kept open): an overlay of this state would go over one
		// that is gone.
		it.base = ""
		return nil
	}
	cp := it.cp
	cp.Sum = ""
	head, err := json.Marshal(overlayHead{Format: overlayFormat, Base: it.base, Checkpoint: cp})
	if err != nil {
		return err
	}
	err = durable.WriteCacheIn(en.overlayPath(it.spec.Name), tmp, func(w io.Writer) error {
		sum := crc32.NewIEEE()
		all := io.MultiWriter(w, sum)
		if _, err := all.Write(append(head, '\n')); err != nil {
			return err
		}
		if err := it.proj.(Overlayer).WriteOverlay(all); err != nil {
			return err
		}
		_, err := w.Write(binary.LittleEndian.AppendUint32(nil, sum.Sum32()))
		return err
	})
	if err != nil {
		return err
	}
	it.overlaid = it.cp.Events
	return nil
}

// dropOverlay removes an overlay its snapshot was saved over (it would
// not be loaded: another base).
func (en *Engine) dropOverlay(it *item) error {
	if err := os.Remove(en.overlayPath(it.spec.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
