package projections

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// firstDifference names where two JSON documents first differ, as a path
// ("items[2].state") with both values, so that verify can say which field
// of a hand-edited work-tree file is wrong. ok is false when either side is
// not JSON.
func firstDifference(disk, want []byte) (where string, ok bool) {
	var a, b any
	if json.Unmarshal(disk, &a) != nil || json.Unmarshal(want, &b) != nil {
		return "", false
	}
	path, da, db := diffValue("", a, b)
	if path == "" && da == "" {
		return "", false // equal as JSON: only the bytes (spacing, order) differ
	}
	if path == "" {
		path = "the document"
	}
	return fmt.Sprintf("%s is %s on disk, %s in a fresh replay", path, da, db), true
}

func diffValue(path string, a, b any) (string, string, string) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			va, ina := x[k]
			vb, inb := y[k]
			p := join(path, k)
			switch {
			case !ina:
				return p, "missing", show(vb)
			case !inb:
				return p, show(va), "absent"
			}
			if p, da, db := diffValue(p, va, vb); da != "" {
				return p, da, db
			}
		}
		return "", "", ""
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < len(x) && i < len(y); i++ {
			if p, da, db := diffValue(path+"["+strconv.Itoa(i)+"]", x[i], y[i]); da != "" {
				return p, da, db
			}
		}
		if len(x) != len(y) {
			return path, fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d", len(y))
		}
		return "", "", ""
	}
	if sa, sb := show(a), show(b); sa != sb {
		return path, sa, sb
	}
	return "", "", ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		b = append(bytes.Clone(b[:77]), "..."...)
	}
	return string(b)
}
