package mergequeue

import (
	"strconv"
	"strings"
)

// MinRefPrefix is the shortest entry_ref prefix commands accept.
const MinRefPrefix = 4

// Lookup finds the entry a command names: its number, or a unique prefix
// (MinRefPrefix hex digits or more) of its entry_ref. Numbers are assigned
// in replay order and change when clones' logs merge; the ref never does,
// so scripts hold it. Digits that are an entry's number name that entry.
func (s *State) Lookup(handle string) (*Entry, error) {
	n, numErr := strconv.ParseInt(handle, 10, 64)
	if numErr == nil {
		if e := s.Entry(n); e != nil {
			return e, nil
		}
	}
	prefix := strings.ToLower(handle)
	if len(prefix) < MinRefPrefix || strings.Trim(prefix, "0123456789abcdef") != "" {
		if numErr == nil {
			return nil, EntryNotFound(n)
		}
		return nil, InvalidEntryRef(handle)
	}
	found, refs := s.withRefPrefix(prefix) // an entry is decoded only once it is the one
	switch len(found) {
	case 0:
		if numErr == nil {
			return nil, EntryNotFound(n)
		}
		return nil, EntryRefNotFound(prefix)
	case 1:
		return s.Entry(found[0]), nil
	}
	return nil, AmbiguousEntryRef(prefix, refs)
}
