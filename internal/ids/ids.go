// Package ids makes the short ids of tasks and jobs: hashes of the writer
// (a random id per clone), the time and a title, so clones never
// coordinate and never collide.
package ids

import (
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"time"
)

// Length is how many base-36 characters a new id gets when n items exist:
// at least 4, and enough that two clones creating tasks offline are unlikely
// to collide (n² / 36^len stays under 1%), as beads' hash ids grow.
func Length(n int) int {
	length := 4
	for space := 36.0 * 36 * 36 * 36; float64(n+1)*float64(n+1)*100 > space && length < 12; space *= 36 {
		length++
	}
	return length
}

// ForKey derives the id of the item one idempotency key makes (a PRD's
// epic): every clone that makes it gives it the same id, so two clones
// that both made it made one item, and the log keeps its first creation.
func ForKey(prefix, key string) string {
	sum := sha256.Sum256([]byte("spool key\x00" + key))
	return prefix + "-" + new(big.Int).SetBytes(sum[:16]).Text(36)[:8]
}

// New derives an id from the writer (a random id per clone), the time,
// the title and a nonce, so clones never coordinate; exists reports ids taken
// in this clone, which lengthen the id until it is free.
func New(prefix, writer, title string, now time.Time, n int, exists func(string) bool) string {
	var buf []byte
	buf = append(buf, writer...)
	buf = binary.AppendVarint(buf, now.UnixNano())
	buf = append(buf, title...)
	for nonce := 0; ; nonce++ {
		sum := sha256.Sum256(binary.AppendUvarint(buf, uint64(nonce)))
		digits := new(big.Int).SetBytes(sum[:16]).Text(36)
		for length := Length(n); length <= len(digits); length++ {
			id := prefix + "-" + digits[:length]
			if !exists(id) {
				return id
			}
			if length >= Length(n)+3 {
				break // crowded: try another hash rather than ever longer ids
			}
		}
	}
}
