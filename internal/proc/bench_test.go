package proc

import (
	"context"
	"os/exec"
	"testing"
)

func BenchmarkRunTrue(b *testing.B) {
	for b.Loop() {
		if err := Run(context.Background(), Cmd{Argv: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.Command("true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}
