package contract

import "net/http"

// Route names the documented operation a request reaches, as the spec writes it: its path
// template (/payments/{id}) and method. ok is false for a request no operation matches, and
// for HEAD and OPTIONS, which the spec does not list as operations.
func (c *Contract) Route(req *http.Request) (path, method string, ok bool) {
	route, _, err := c.router.FindRoute(req)
	if err != nil {
		return "", "", false
	}
	return route.Path, route.Method, true
}
