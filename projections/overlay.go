package projections

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	// MarshalOverlay encodes what changed since the snapshot was loaded,
	// an overlay loaded over it included.
	MarshalOverlay() ([]byte, error)
	// UnmarshalOverlay applies what MarshalOverlay wrote to a projection
	// just loaded from the same snapshot: all of it, or nothing and an error.
	UnmarshalOverlay([]byte) error
}

// overlayHead is an overlay's first line: the checkpoint of the state the
// snapshot and the overlay make (its Sum the overlay's), and which
// snapshot it goes over.
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

// loadOverlay loads the overlay over the snapshot it was just loaded
// from, if there is one for that snapshot and it is whole. It is
// a cache: any overlay that does not hold is passed over.
func (en *Engine) loadOverlay(it *item) {
	o, ok := it.proj.(Overlayer)
	if !ok || it.spec.Overlay <= 0 {
		return
	}
	b, err := os.ReadFile(en.overlayPath(it.spec.Name))
	if err != nil {
		return
	}
	head, body, _ := bytes.Cut(b, []byte{'\n'})
	var oh overlayHead
	if json.Unmarshal(head, &oh) != nil || oh.Format != overlayFormat || oh.Base != it.base ||
		!oh.Checkpoint.valid(it.spec) || !sumMatches(oh.Checkpoint.Sum, body) {
		return
	}
	if o.UnmarshalOverlay(body) != nil {
		return
	}
	oh.Checkpoint.Sum = ""
	it.cp, it.overlaid = oh.Checkpoint, oh.Checkpoint.Events
}

// writeOverlay writes it's overlay. It is a cache, as the checksum in its
// first line says whether it is whole: not fsynced, and the temp file is
// in tmp, which the next save sweeps if a crash leaves it there.
func (en *Engine) writeOverlay(it *item, tmp string) error {
	if head, ok := en.snapshotHead(it.spec.Name); !ok || baseOf(head) != it.base {
		// Another process saved the snapshot (spool replay, while this
		// view was kept open): an overlay of this state would go over one
		// that is gone.
		it.base = ""
		return nil
	}
	body, err := it.proj.(Overlayer).MarshalOverlay()
	if err != nil {
		return err
	}
	cp := it.cp
	cp.Sum = bodySum(body)
	head, err := json.Marshal(overlayHead{Format: overlayFormat, Base: it.base, Checkpoint: cp})
	if err != nil {
		return err
	}
	if err := durable.WriteCacheIn(en.overlayPath(it.spec.Name), tmp, append(head, '\n'), body); err != nil {
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
