package contract

import (
	"net/http"
	"strings"
)

// Route names the documented operation a request reaches, as the spec writes it: its path
// template (/payments/{id}) and method (HEAD and OPTIONS included). ok is false for a request
// no operation matches.
func (c *Contract) Route(req *http.Request) (path, method string, ok bool) {
	route, _, err := c.router.FindRoute(req)
	if err != nil {
		return "", "", false
	}
	return route.Path, route.Method, true
}

// route is an operation's method and path template, as the spec writes them.
type route struct{ method, path string }

// Operation is the operation at method and path, the path template written as in the spec
// (/payments/{id}), or nil. A server whose router already matched a request to its operation
// validates it with Operation(...).Validate and so routes each request once.
func (c *Contract) Operation(method, path string) *Operation {
	return c.byRoute[route{method, path}]
}

// TakesBody reports whether the operation declares a request body.
func (op *Operation) TakesBody() bool { return op.body != nil }

// BodyMediaTypes lists the media types the operation's body may be sent in, sorted; none
// when it takes no body.
func (op *Operation) BodyMediaTypes() []string {
	if op.body == nil {
		return nil
	}
	return op.body.accepted()
}

// EchoPath writes a spec path template as echo's router names the route: /payments/{id} is
// /payments/:id. It is the one translation between the two spellings; Template reads it
// backwards.
func EchoPath(template string) string {
	return echoPathReplacer.Replace(template)
}

var echoPathReplacer = strings.NewReplacer("{", ":", "}", "")

// Template is the spec's path template (/payments/{id}) of a route as echo's router names it
// (/payments/:id), which is how metrics, logs and spans name a request's route; ok is false
// for a path the contract does not hold.
func (c *Contract) Template(echoPath string) (template string, ok bool) {
	template, ok = c.templates[echoPath]
	return template, ok
}
