package workqueue

import "time"

// SetSpillWindow sets the spill's window for a test and returns what restores it.
func SetSpillWindow(n int64) (restore func()) {
	old := spillWindow
	spillWindow = n
	return func() { spillWindow = old }
}

// IndexRead reports whether a command on s read its task table's index.
func IndexRead(s *State) bool { return s.trk.lazy != nil && s.trk.lazy.loaded.Load() != nil }

// SummaryBeadsStats is bd stats from its section, and whether it served.
func SummaryBeadsStats(s *State, now time.Time) (Statistics, bool) { return s.summaryBeadsStats(now) }

// BlockedFromSection reports whether bd blocked reads its candidates from
// bd's section of the tasks' table.
func BlockedFromSection(s *State) bool {
	_, ok := s.blockedCandidates()
	return ok
}
