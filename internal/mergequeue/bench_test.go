package mergequeue

import (
	"fmt"
	"testing"
	"time"
)

// queueOf1000 is a queue with n pending entries of mixed priority.
func queueOf(b testing.TB, n int) *State {
	s := New()
	for i := 0; i < n; i++ {
		r := req(fmt.Sprintf("ws-%04d", i), i+1, "ada")
		r.Priority = P(i % 5)
		submit(b, s, r, t0.Add(time.Duration(i)*time.Second))
	}
	return s
}

func BenchmarkDecideSubmit1000(b *testing.B) {
	s := queueOf(b, 1000)
	r := req("ws-new", 5000, "ada")
	for b.Loop() {
		if _, err := DecideSubmit(s, r, pol, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplySubmit1000(b *testing.B) {
	s := queueOf(b, 1000)
	sub, _ := DecideSubmit(s, req("ws-new", 5000, "ada"), pol, t0)
	for b.Loop() {
		c := *s
		c.Entries = s.Entries[:len(s.Entries):len(s.Entries)]
		fold(b, &c, t0, "ada", sub.Drafts)
	}
}

func BenchmarkMarshalState1000(b *testing.B) {
	s := queueOf(b, 1000)
	for b.Loop() {
		s.render()
	}
}

func BenchmarkUnmarshalState1000(b *testing.B) {
	data, _ := queueOf(b, 1000).MarshalState()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var s State
		if err := s.UnmarshalState(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFiles1000(b *testing.B) {
	s := queueOf(b, 1000)
	for b.Loop() {
		s.encoded = nil
		s.Files()
	}
}

func BenchmarkCheckInvariants1000(b *testing.B) {
	s := queueOf(b, 1000)
	for b.Loop() {
		CheckInvariants(s)
	}
}

// BenchmarkReplay1000 folds 1,000 submissions and 1,000 claims from scratch,
// as a rebuild does.
func BenchmarkReplay1000(b *testing.B) {
	for b.Loop() {
		s := queueOf(b, 1000)
		for range 1000 {
			drafts, _ := DecideClaim(s, "r1", Target{Branch: "main"}, pol, t0)
			fold(b, s, t0, "train", drafts)
		}
	}
}
