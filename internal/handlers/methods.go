package handlers

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/payments-api/payments-api/internal/api"
	"github.com/payments-api/payments-api/internal/contract"
)

// HEAD and OPTIONS are operations in api/openapi.yaml, tagged "HTTP conventions": a head
// beside every get, with the GET's parameters and statuses and no body, and an options on
// every path, 204 with Allow and no key (see "HTTP methods and CORS" there). Listed, they are
// checked like any operation: by validators and schema-driven testers outside, and here by
// internal/apitest, which validates every answer to HEAD and OPTIONS against them (and Allow
// against the path's methods). They are not implemented one by one: the generated interface
// leaves them out (exclude-tags in internal/api/oapi-codegen.yaml), and the code below
// answers them for every route, HEAD by running the GET and OPTIONS from echo's router, so
// the answers cannot drift from the GET or from the routes served.

// withHead registers every GET route for HEAD as well (RFC 9110 §9.3.2: a general-purpose
// server supports HEAD wherever it supports GET). Registering it with echo, rather than
// rewriting the method before routing, keeps echo's Allow header (on 405s and OPTIONS) in
// step with what is served.
type withHead struct{ api.EchoRouter }

func (r withHead) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	r.HEAD(path, h, m...)
	return r.EchoRouter.GET(path, h, m...)
}

// answerMethods serves the methods every route has. It runs before authentication.
//
// OPTIONS answers 204 with the route's Allow, to anyone: what a route supports is no secret,
// and tools probe it before they hold a key. (A CORS preflight never gets here: the CORS
// middleware answers it.)
//
// HEAD goes on down the chain as a GET, so authentication, validation, the handler, the
// status and the headers are the GET's. net/http discards the body written in answer to a
// HEAD and still sends the Content-Length it would have had.
func answerMethods(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		switch req.Method {
		case http.MethodOptions:
			allow, _ := c.Get(echo.ContextKeyHeaderAllow).(string) // set by echo's router
			if allow == "" {
				return contract.ErrNoRoute
			}
			c.Response().Header().Set(echo.HeaderAllow, allow)
			return c.NoContent(http.StatusNoContent)
		case http.MethodHead:
			asGet := req.WithContext(req.Context()) // a copy: net/http keeps the original's HEAD
			asGet.Method = http.MethodGet
			c.SetRequest(asGet)
			// The request log and the error handler run after this returns: show them the
			// method the client sent. c.Request() is by then a copy of asGet, never the
			// server's own request.
			defer func() { c.Request().Method = http.MethodHead }()
		}
		return next(c)
	}
}

// optionsOnRoutes answers an OPTIONS to a path the spec does not hold 404, before the CORS
// middleware and answerMethods answer it from echo's Allow: echo's router backtracks to a
// route that matches a prefix of the path and lists that route's methods ("/jobs/:id" for
// "/jobs/abc/"), where every other method gets its 404. On a path that takes PATCH it names
// the patch formats in Accept-Patch, as RFC 5789 asks.
func optionsOnRoutes(spec *contract.Contract) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if c.Request().Method != http.MethodOptions {
				return next(c)
			}
			path, _, ok := spec.Route(c.Request())
			if !ok {
				c.SetPath("") // unmatched, in the log, the metrics and the span
				return contract.ErrNoRoute
			}
			if patch := spec.Operation(http.MethodPatch, path); patch != nil {
				c.Response().Header().Set("Accept-Patch", strings.Join(patch.BodyMediaTypes(), ", "))
			}
			return next(c)
		}
	}
}

// servedRoutes registers only the routes whose operation the contract serves: a production
// contract leaves the sandbox's out, so echo has no route for them and answers them as it
// answers any path nobody wrote.
type servedRoutes struct {
	*echo.Echo
	contract *contract.Contract
}

func (r servedRoutes) serves(method, path string) bool {
	template, ok := r.contract.Template(path)
	return ok && r.contract.Operation(method, template) != nil
}

func (r servedRoutes) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodGet, path, h, m)
}

// HEAD is served where GET is (withHead).
func (r servedRoutes) HEAD(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	if !r.serves(http.MethodGet, path) {
		return nil
	}
	return r.Echo.HEAD(path, h, m...)
}

func (r servedRoutes) POST(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPost, path, h, m)
}

func (r servedRoutes) PUT(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPut, path, h, m)
}

func (r servedRoutes) PATCH(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodPatch, path, h, m)
}

func (r servedRoutes) DELETE(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) *echo.Route {
	return r.add(http.MethodDelete, path, h, m)
}

func (r servedRoutes) add(method, path string, h echo.HandlerFunc, m []echo.MiddlewareFunc) *echo.Route {
	if !r.serves(method, path) {
		return nil
	}
	return r.Add(method, path, h, m...)
}
