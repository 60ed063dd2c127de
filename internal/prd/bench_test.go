package prd

import (
	"os"
	"testing"
)

// BenchmarkParse parses a realistic 8 KiB PRD: front matter with a list and
// comments, sixteen sections, three open questions near the end.
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/realistic.md")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
