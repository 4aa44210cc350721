package main

import "testing"

func TestHeadCountsLikeItsGet(t *testing.T) {
	seen := map[string]bool{
		"GET /payments/{id} 200": true, "GET /payments/{id} 404": true, "HEAD /payments/{id} 404": true,
		"GET /payments 200": true,                           // no HEAD of /payments was checked
		"HEAD /account 401": true, "GET /account 400": true, // a HEAD checked, but not of /account's 400
	}
	for _, tt := range []struct {
		response string
		covered  bool
	}{
		{"HEAD /payments/{id} 200", true},  // the GET's 200, and a HEAD of the path checked
		{"HEAD /payments/{id} 304", false}, // no GET 304 recorded
		{"HEAD /payments 200", false},      // no HEAD of /payments recorded
		{"HEAD /account 400", true},
		{"HEAD /account 200", false},
		{"GET /payments/{id} 304", false}, // the rule is for HEAD only
		{"PATCH /payments/{id} 200", false},
	} {
		if got := headLikeGet(tt.response, seen); got != tt.covered {
			t.Errorf("headLikeGet(%q) = %v, want %v", tt.response, got, tt.covered)
		}
	}
}
