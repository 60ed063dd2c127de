package config

import (
	"slices"
	"testing"
)

// A Tracked configuration records the keys read, and reads their defaults.
func TestTrackedRecordsReads(t *testing.T) {
	t.Parallel()
	c := Tracked()
	s := SettingsFrom(c)
	if s.LockTimeout != registry["lock.timeout"].Default || len(s.Admins) != 0 {
		t.Errorf("settings of an empty configuration %+v, want the defaults", s)
	}
	want := []string{"admins", "hooks.timeout", "hooks.verify_on_push", "lock.timeout"}
	if got := c.Read(); !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	if got := (&Config{}).Read(); len(got) != 0 {
		t.Errorf("an untracked configuration read %v", got)
	}
}
