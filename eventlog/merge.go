package eventlog

import (
	"bytes"
	"fmt"
	"sort"
)

// Union merges two versions of one writer file, as git's merge driver does
// when the same writer appended on two branches: every event of either side is
// kept once (by id), ordered by (lc, id), and seq is renumbered from 1 so the
// file stays contiguous. Ids leave seq out, so renumbering keeps them, and any
// two clones that union the same events produce the same bytes.
func Union(ours, theirs []byte) ([]byte, error) {
	byID := map[string]*Event{}
	for side, data := range [][]byte{ours, theirs} {
		for n, line := range bytes.SplitAfter(data, []byte{'\n'}) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			e, err := Decode(line)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", [2]string{"ours", "theirs"}[side], n+1, err)
			}
			if _, dup := byID[e.ID]; !dup {
				byID[e.ID] = e
			}
		}
	}
	events := make([]*Event, 0, len(byID))
	for _, e := range byID {
		events = append(events, e)
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].LC != events[j].LC {
			return events[i].LC < events[j].LC
		}
		return events[i].ID < events[j].ID
	})
	var out bytes.Buffer
	for i, e := range events {
		e.Seq = uint64(i + 1)
		line, err := e.Encode()
		if err != nil {
			return nil, err
		}
		out.Write(line)
	}
	return out.Bytes(), nil
}
