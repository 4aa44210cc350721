package main

// The floor is cmd/payments-load/minimal: echo and pgx sending the server's own SQL, with
// nothing of ours in between. Run beside the server (-minimal-url), the scenarios it serves
// are measured against it in the same alternating slices as the SQL baselines, and the
// ratio says what share of the bare stack's rate the whole server keeps. It is a peer
// (peer.go): it reads the server's database, so it answers the server's own requests.

// floorScenarios are the scenarios the minimal server answers as the server does.
var floorScenarios = map[string]bool{"get": true, "create": true}
