package main

// unreachable lists the documented responses no test can produce, as "METHOD PATH STATUS"
// mapped to the reason. Every entry must still be documented and still unproduced
// (statuscoverage fails otherwise), so the list cannot outlive its reasons. It is empty: a
// test in internal/handlers produces the shared responses (400, 401, 404, 413, 415, 429, 500,
// 503) of every operation, and the other tests the rest.
var unreachable = map[string]string{}
