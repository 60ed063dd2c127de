package projections

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/spoolhq/spool/eventlog"
)

// Stats counts the log: events per type and per writer, and the last clock.
type Stats struct {
	Events   int            `json:"events"`
	ByType   map[string]int `json:"by_type"`
	ByWriter map[string]int `json:"by_writer"`
	LastLC   uint64         `json:"last_lc"`
	LastAt   *time.Time     `json:"last_at,omitempty"`
}

// StatsSpec registers the stats projection.
var StatsSpec = Spec{Name: "stats", Version: 1, New: func() Projection { return NewStats() }}

// NewStats returns empty stats.
func NewStats() *Stats {
	return &Stats{ByType: map[string]int{}, ByWriter: map[string]int{}}
}

func (s *Stats) Apply(e *eventlog.Event) error {
	s.Events++
	s.ByType[e.Type]++
	s.ByWriter[e.Writer]++
	s.LastLC = max(s.LastLC, e.LC)
	if s.LastAt == nil || e.At.After(*s.LastAt) {
		at := e.At
		s.LastAt = &at
	}
	return nil
}

func (s *Stats) MarshalState() ([]byte, error) { return json.Marshal(s) }

// UnmarshalState refuses a state that Apply could not continue from (the
// engine then rebuilds it) rather than panic on a nil map later.
func (s *Stats) UnmarshalState(b []byte) error {
	if err := json.Unmarshal(b, s); err != nil {
		return err
	}
	if s.ByType == nil || s.ByWriter == nil {
		return errors.New("stats state without by_type or by_writer")
	}
	return nil
}

func (s *Stats) Files() ([]File, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return []File{{Path: "stats.json", Data: append(b, '\n')}}, nil
}
