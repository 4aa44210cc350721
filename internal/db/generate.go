package db

// sqlc lives in its own module (tools/) so its many dependencies stay out of the server's go.mod.
//go:generate go -C ../../tools tool sqlc generate -f ../sqlc.yaml
