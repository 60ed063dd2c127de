package workqueue

// SetSpillWindow sets the spill's window for a test and returns what restores it.
func SetSpillWindow(n int64) (restore func()) {
	old := spillWindow
	spillWindow = n
	return func() { spillWindow = old }
}
