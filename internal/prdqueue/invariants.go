package prdqueue

import (
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Invariants are the rules the queue's state keeps, whatever the log
// (merged clones included: a state that only a later sync corrects, such as
// approved with a gate another clone saw withdrawn, is not a broken rule):
// spool verify reports what a fresh replay breaks.
func (p *Projection) Invariants() []string {
	s := p.s
	var out []string
	epics := map[string]string{} // epic → PRD
	for _, slug := range slices.Sorted(maps.Keys(s.PRDs)) {
		prd := s.PRDs[slug]
		if prd.Epic == "" {
			continue
		}
		if other, ok := epics[prd.Epic]; ok {
			out = append(out, fmt.Sprintf("PRDs %s and %s share the epic %s", other, slug, prd.Epic))
		}
		epics[prd.Epic] = slug
	}
	for _, slug := range slices.Sorted(maps.Keys(s.PRDs)) {
		if p := s.PRDs[slug]; CheckSlug("PRD", slug) != nil || !SafePath(p.Path) {
			out = append(out, fmt.Sprintf("PRD %q has a path no command takes (%q)", slug, p.Path))
		}
	}
	for _, slug := range slices.Sorted(maps.Keys(s.Features)) {
		f := s.Features[slug]
		if CheckSlug("feature", slug) != nil || f.WorkerCap < 1 || f.WorkerCap > MaxWorkerCap {
			out = append(out, fmt.Sprintf("feature %q has a slug or a worker cap (%d) no command takes", slug, f.WorkerCap))
		}
		// A PRD is in a feature's manifest once, as one item: two clones
		// that added it apart made one entry.
		seen := map[string]bool{}
		for _, prd := range f.Items {
			switch {
			case seen[prd]:
				out = append(out, fmt.Sprintf("feature %s lists %s twice", slug, prd))
			case s.Items[ItemKey{slug, prd}] == nil:
				out = append(out, fmt.Sprintf("feature %s lists %s, which is not one of its items", slug, prd))
			}
			seen[prd] = true
		}
	}
	for k, it := range s.Items {
		p := s.PRDs[k.PRD]
		switch {
		case !it.State.Valid():
			out = append(out, fmt.Sprintf("%s/%s is in no state (%q)", k.Feature, k.PRD, it.State))
		case it.State == Queued && (p.Epic == "" || it.EnqueuedKey == ""):
			out = append(out, fmt.Sprintf("%s/%s is queued with no epic", k.Feature, k.PRD))
		}
		if f := s.Features[k.Feature]; f == nil || !containsString(f.Items, k.PRD) {
			out = append(out, fmt.Sprintf("%s/%s is missing from its feature's manifest", k.Feature, k.PRD))
		}
	}
	sort.Strings(out)
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
