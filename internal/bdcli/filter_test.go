package bdcli

import (
	"reflect"
	"testing"
)

// unfiltered holds for a filter that sets nothing, or only --long, and
// for no other: every field set alone turns it off (bd list's default
// takes the index's shortcut only when nothing filters).
func TestUnfiltered(t *testing.T) {
	if !(bdFilter{}).unfiltered() || !(bdFilter{Long: true}).unfiltered() {
		t.Fatal("the empty filter, or --long alone, filters")
	}
	one := "1"
	typ := reflect.TypeFor[bdFilter]()
	for i := range typ.NumField() {
		var f bdFilter
		v := reflect.ValueOf(&f).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Pointer:
			v.Set(reflect.ValueOf(&one))
		case reflect.Slice:
			v.Set(reflect.ValueOf([]string{"x"}))
		default:
			t.Fatalf("%s: a kind this test does not set", typ.Field(i).Name)
		}
		if got, want := f.unfiltered(), typ.Field(i).Name == "Long"; got != want {
			t.Errorf("%s set: unfiltered %v", typ.Field(i).Name, got)
		}
	}
}
