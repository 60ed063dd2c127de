package projectiontest

import (
	"bytes"
	"fmt"
	"io"

	"github.com/spoolhq/spool/eventlog"
	"github.com/spoolhq/spool/projections"
)

// rendering is what a projection persists: its state and its public files.
type rendering struct {
	state []byte
	files []projections.File
}

// render asks p for both, copied (a projection may hand out a buffer it
// keeps). filesFirst asks for the files first: a projection decoding its
// snapshot lazily must give the same either way.
func render(p projections.Projection, filesFirst bool) (rendering, error) {
	var r rendering
	marshal := func() error {
		state, err := p.MarshalState()
		r.state = bytes.Clone(state)
		return err
	}
	renderFiles := func() error {
		files, err := p.Files()
		for _, f := range files {
			f.Data = bytes.Clone(f.Data)
			r.files = append(r.files, f)
		}
		return err
	}
	steps := []func() error{marshal, renderFiles}
	if filesFirst {
		steps[0], steps[1] = steps[1], steps[0]
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// streamed is what p writes as a projections.StateWriter and FileWriter,
// each in place of MarshalState and Files where p is not one; ok is false
// when p is neither.
func streamed(p projections.Projection) (r rendering, ok bool, err error) {
	sw, isState := p.(projections.StateWriter)
	fw, isFiles := p.(projections.FileWriter)
	if !isState && !isFiles {
		return r, false, nil
	}
	if r, err = render(p, false); err != nil {
		return r, true, err
	}
	if isState {
		var b bytes.Buffer
		if err := sw.WriteState(&b); err != nil {
			return r, true, err
		}
		r.state = b.Bytes()
	}
	if isFiles {
		r.files = nil
		err := fw.WriteFiles(func(path string, workTree bool, write func(io.Writer) error) error {
			var b bytes.Buffer
			if err := write(&b); err != nil {
				return err
			}
			r.files = append(r.files, projections.File{Path: path, Data: b.Bytes(), WorkTree: workTree})
			return nil
		})
		if err != nil {
			return r, true, err
		}
	}
	return r, true, nil
}

// diff describes how got differs from want, or returns "".
func (got rendering) diff(want rendering) string {
	if !bytes.Equal(got.state, want.state) {
		return "state " + bytesDiff(got.state, want.state)
	}
	if len(got.files) != len(want.files) {
		return fmt.Sprintf("%d files %v, want %d %v", len(got.files), paths(got.files), len(want.files), paths(want.files))
	}
	for i, f := range got.files {
		w := want.files[i]
		switch {
		case f.Path != w.Path:
			return fmt.Sprintf("file %d is %s, want %s", i, f.Path, w.Path)
		case f.WorkTree != w.WorkTree:
			return fmt.Sprintf("%s in the work tree %v, want %v", f.Path, f.WorkTree, w.WorkTree)
		case !bytes.Equal(f.Data, w.Data):
			return f.Path + " " + bytesDiff(f.Data, w.Data)
		}
	}
	return ""
}

func paths(files []projections.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// bytesDiff shows where two renderings part, with some context.
func bytesDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	from := max(i-60, 0)
	excerpt := func(b []byte) []byte { return b[min(from, len(b)):min(i+80, len(b))] }
	return fmt.Sprintf("differs at byte %d of %d (want %d):\n got …%q…\nwant …%q…", i, len(got), len(want), excerpt(got), excerpt(want))
}

// fold applies events to a new projection of spec, in memory.
func fold(spec projections.Spec, events []*eventlog.Event) (projections.Projection, error) {
	p := spec.New()
	for _, e := range events {
		if err := p.Apply(e); err != nil {
			return nil, fmt.Errorf("apply %s %s: %w", e.Type, e.ID, err)
		}
	}
	return p, nil
}
