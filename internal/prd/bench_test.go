package prd

import (
	"crypto/sha256"
	"os"
	"testing"
)

func realistic(b *testing.B) []byte {
	data, err := os.ReadFile("testdata/realistic.md")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkParse parses a realistic 8 KiB PRD: front matter with a list and
// comments, sixteen sections, three open questions near the end.
func BenchmarkParse(b *testing.B) {
	data := realistic(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseParts times Parse's parts on the same PRD, to show where the
// time goes: the front matter (mostly yaml/v3), the hash, and the open
// questions with and without the cut before goldmark.
func BenchmarkParseParts(b *testing.B) {
	data := realistic(b)
	fm, err := readFrontMatter(data)
	if err != nil {
		b.Fatal(err)
	}
	body := data[fm.bodyStart:]
	b.Run("frontmatter", func(b *testing.B) {
		for b.Loop() {
			readFrontMatter(data)
		}
	})
	b.Run("sha256", func(b *testing.B) {
		for b.Loop() {
			sha256.Sum256(data)
		}
	})
	b.Run("questions", func(b *testing.B) {
		for b.Loop() {
			openQuestions(body)
		}
	})
	b.Run("questions-whole-body", func(b *testing.B) {
		for b.Loop() {
			parseWhole(body)
		}
	})
}
