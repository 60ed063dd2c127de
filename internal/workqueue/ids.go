package workqueue

import (
	"crypto/sha256"
	"encoding/binary"
	"math/big"
	"regexp"
	"time"
)

var prefixPattern = regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`)

// ValidPrefix reports whether p can start task ids (ids.prefix).
func ValidPrefix(p string) bool { return prefixPattern.MatchString(p) }

// IDLength is how many base-36 characters a new id gets when n tasks exist:
// at least 4, and enough that two clones creating tasks offline are unlikely
// to collide (n² / 36^len stays under 1%), as beads' hash ids grow.
func IDLength(n int) int {
	length := 4
	for space := 36.0 * 36 * 36 * 36; float64(n+1)*float64(n+1)*100 > space && length < 12; space *= 36 {
		length++
	}
	return length
}

// NewID derives a task id from the writer (a random id per clone), the time,
// the title and a nonce, so clones never coordinate; exists reports ids taken
// in this clone, which lengthen the id until it is free.
func NewID(prefix, writer, title string, now time.Time, n int, exists func(string) bool) string {
	var buf []byte
	buf = append(buf, writer...)
	buf = binary.AppendVarint(buf, now.UnixNano())
	buf = append(buf, title...)
	for nonce := 0; ; nonce++ {
		sum := sha256.Sum256(binary.AppendUvarint(buf, uint64(nonce)))
		digits := new(big.Int).SetBytes(sum[:16]).Text(36)
		for length := IDLength(n); length <= len(digits); length++ {
			id := prefix + "-" + digits[:length]
			if !exists(id) {
				return id
			}
			if length >= IDLength(n)+3 {
				break // crowded: try another hash rather than ever longer ids
			}
		}
	}
}
