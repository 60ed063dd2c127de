package plans

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// PRDFile is prd.json (docs/orchestrator.md: prd.json): sections by name, each with its
// content, version and change log. LastUpdate is the hash of the last
// proposal written, so that a command interrupted between writing the file
// and recording it does not apply the proposal twice. Other top-level keys
// are kept as they were.
type PRDFile struct {
	Sections   map[string]*Section
	LastUpdate string
	other      map[string]json.RawMessage
}

// Section is one PRD section.
type Section struct {
	Content   string        `json:"content"`
	Version   int           `json:"version"`
	ChangeLog []ChangeEntry `json:"change_log"`
}

// ChangeEntry is one line of a section's change log.
type ChangeEntry struct {
	Version int       `json:"version"`
	Entry   string    `json:"entry"`
	At      time.Time `json:"at"`
}

// ParsePRDFile reads prd.json; nil or empty data is an empty PRD.
func ParsePRDFile(data []byte) (*PRDFile, error) {
	f := &PRDFile{Sections: map[string]*Section{}, other: map[string]json.RawMessage{}}
	if len(data) == 0 {
		return f, nil
	}
	if err := json.Unmarshal(data, &f.other); err != nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if raw, ok := f.other["sections"]; ok {
		if err := json.Unmarshal(raw, &f.Sections); err != nil {
			return nil, fmt.Errorf("sections: %v", err)
		}
	}
	if raw, ok := f.other["last_update"]; ok {
		if err := json.Unmarshal(raw, &f.LastUpdate); err != nil {
			return nil, fmt.Errorf("last_update: %v", err)
		}
	}
	for name, s := range f.Sections {
		if s == nil {
			return nil, fmt.Errorf("sections.%s: not an object", name)
		}
	}
	delete(f.other, "sections")
	delete(f.other, "last_update")
	return f, nil
}

// Apply writes each update into its section: the content replaced, the
// version one more, the entry appended to the change log.
func (f *PRDFile) Apply(p PRDProposal, hash string, now time.Time) {
	for _, u := range p.Updates {
		s := f.Sections[u.Section]
		if s == nil {
			s = &Section{}
			f.Sections[u.Section] = s
		}
		s.Content = u.Content
		s.Version++
		s.ChangeLog = append(s.ChangeLog, ChangeEntry{Version: s.Version, Entry: u.Entry, At: now.UTC()})
	}
	f.LastUpdate = hash
}

// Marshal is the file's bytes: indented, keys sorted, a final newline.
func (f *PRDFile) Marshal() []byte {
	out := map[string]any{"sections": f.Sections, "last_update": f.LastUpdate}
	for k, v := range f.other {
		out[k] = v
	}
	for _, s := range f.Sections {
		if s.ChangeLog == nil {
			s.ChangeLog = []ChangeEntry{}
		}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// Names lists the sections p updates, sorted.
func (p PRDProposal) Names() []string {
	out := make([]string, 0, len(p.Updates))
	for _, u := range p.Updates {
		out = append(out, u.Section)
	}
	sort.Strings(out)
	return out
}
