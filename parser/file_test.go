package parser

import (
	"encoding/json"
	"testing"
)

func TestFileEventJSON(t *testing.T) {
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{Event{Type: File, Name: "report.txt", File: &FileInfo{Size: 1234, Path: "/secret/place/report.txt", URL: "/v1/files/abc"}},
			`{"type":"file","name":"report.txt","size":1234,"url":"/v1/files/abc"}`},
		{Event{Type: File, Name: "a \"b\".png", File: &FileInfo{Size: 0}}, `{"type":"file","name":"a \"b\".png","size":0}`},
		{Event{Type: File, Name: "empty"}, `{"type":"file","name":"empty","size":0}`},
	} {
		got, err := json.Marshal(tc.ev)
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v marshals to %s (%v), want %s", tc.ev, got, err, tc.want)
		}
	}
}
