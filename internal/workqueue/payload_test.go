package workqueue

import (
	"encoding/json"
	"reflect"
	"testing"
)

var payloadSeeds = []string{
	`{"text":"plain"}`,
	`{"text":"a \"quoted\" line\nand \u00e9 \ud83d\ude00 \ud800 lone"}`,
	`{"text":null}`,
	`{"Text":"other case"}`,
	`{"text":1}`,
	`{}`,
	`[]`,
	`null`,
	`{"title":"t","priority":3,"add_labels":["a","b"],"remove_labels":[]}`,
	`{"priority":1.5}`,
	`{"priority":1e2}`,
	`{"priority":-0}`,
	`{"priority":99999999999999999999}`,
	`{"add_labels":["a",null]}`,
	`{"add_labels":null}`,
	`{"status":"closed","title":"x","title":"y"}`,
	`{"title":"T","description":"d","design":"g","acceptance_criteria":"a","notes":"n","assignee":"w","owner":"o","priority":2,"issue_type":"bug","labels":["x"],"parent":"sp-1","deps":["sp-2","sp-3"]}`,
	`{"title":"T","unknown":1}`,
	`{"tit\u006ce":"escaped key"}`,
	"{\"text\":\"\xff invalid\"}",
	` { "text" : "spaced" } `,
	`{"attempt":2,"worker":"w@example.com","lease_until":"2026-01-12T09:55:16.123456789Z","priority":1,"source":"native"}`,
	`{"lease_until":"2026-01-12T09:55:16+02:00"}`,
	`{"lease_until":"2026-01-12T09:55:16\u005a"}`,
	`{"lease_until":"2026-13-12T09:55:16Z"}`,
	`{"lease_until":null}`,
	`{"lease_until":1}`,
	`{"attempt":1,"error":"tests failing","error":"twice"}`,
}

// decodeX returns what json.Unmarshal returns, for the payloads spool writes
// and for any other.
func TestPayloadDecodersAsJSONUnmarshal(t *testing.T) {
	t.Parallel()
	for _, s := range payloadSeeds {
		samePayload(t, []byte(s))
	}
}

func FuzzPayloadDecoders(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return // the log's decoder refuses a line whose data is not JSON
		}
		samePayload(t, data)
	})
}

func samePayload(t *testing.T, data []byte) {
	t.Helper()
	sameAs(t, data, decodeComment)
	sameAs(t, data, decodeUpdated)
	sameAs(t, data, decodeCreated)
	sameAs(t, data, decodeClaimed)
	sameAs(t, data, decodeHeartbeat)
	sameAs(t, data, decodeFailed)
}

func sameAs[T any](t *testing.T, data []byte, decode func([]byte, *T) error) {
	t.Helper()
	var want, got T
	wantErr := json.Unmarshal(data, &want)
	gotErr := decode(data, &got)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%T of %q: error %v, json.Unmarshal's %v", got, data, gotErr, wantErr)
	}
	if wantErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T of %q:\n got %#v\nwant %#v", got, data, got, want)
	}
}
