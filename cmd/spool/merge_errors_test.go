package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/spoolhq/spool/internal/fault"
	"github.com/spoolhq/spool/internal/mergequeue"
)

// Every QueueSubmissionError variant renders as the --json error with its
// fields, exits with its kind, and decodes back to the same error: a script
// can act on any error it is sent.
func TestMergeErrorsJSON(t *testing.T) {
	t.Parallel()
	for _, v := range mergequeue.Variants() {
		t.Run(v.Code, func(t *testing.T) {
			var out bytes.Buffer
			code := report(&out, true, v)
			if code != int(v.Kind) || code < 2 || code > 4 {
				t.Errorf("exit %d for kind %d", code, v.Kind)
			}
			var wire map[string]map[string]any
			if err := json.Unmarshal(out.Bytes(), &wire); err != nil {
				t.Fatalf("%s: %v", out.Bytes(), err)
			}
			obj := wire["error"]
			if obj["code"] != v.Code || obj["message"] != v.Message {
				t.Errorf("code/message: %v", obj)
			}
			for k := range v.Fields {
				if _, ok := obj[k]; !ok {
					t.Errorf("field %s missing from %s", k, out.Bytes())
				}
			}
			back, err := decodeMergeError(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if back.Code != v.Code || back.Kind != v.Kind || back.Message != v.Message {
				t.Errorf("decoded %+v", back)
			}
			var again bytes.Buffer
			report(&again, true, back)
			if !bytes.Equal(out.Bytes(), again.Bytes()) {
				t.Errorf("round trip:\n%s\n%s", out.Bytes(), again.Bytes())
			}
			var human bytes.Buffer
			report(&human, false, v)
			if !reflect.DeepEqual(human.String(), "spool: "+v.Message+"\n") {
				t.Errorf("human: %q", human.String())
			}
		})
	}
}

// decodeMergeError reads the --json error object
// {"error":{"code":…,"message":…,<fields>}} back into the merge queue error
// it was rendered from.
func decodeMergeError(b []byte) (*fault.Error, error) {
	var wire struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return nil, err
	}
	if wire.Error == nil {
		return nil, errors.New("no error object")
	}
	code, _ := wire.Error["code"].(string)
	msg, _ := wire.Error["message"].(string)
	variants := mergequeue.Variants()
	i := slices.IndexFunc(variants, func(v *fault.Error) bool { return v.Code == code })
	if i < 0 {
		return nil, fmt.Errorf("unknown merge queue error code %q", code)
	}
	f := &fault.Error{Kind: variants[i].Kind, Code: code, Message: msg}
	for k, v := range wire.Error {
		if k == "code" || k == "message" {
			continue
		}
		if f.Fields == nil {
			f.Fields = map[string]any{}
		}
		f.Fields[k] = v
	}
	return f, nil
}
