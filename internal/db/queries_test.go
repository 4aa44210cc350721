package db_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// generatedQuery is one sqlc query as the server runs it: its SQL with $n placeholders and
// the names of its parameters in $n order.
type generatedQuery struct {
	Name   string
	SQL    string
	Params []string // normalized by paramKey
}

// generatedQueries reads every query out of the sqlc output in this directory: the constants
// (`const paymentGetByID = "-- name: PaymentGetByID :one ..."`) give the SQL, and the method
// of the same name gives the parameters, from its Params struct or its single argument.
func generatedQueries(t *testing.T) map[string]generatedQuery {
	t.Helper()
	files, err := filepath.Glob("*.sql.gen.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no sqlc output in internal/db: %v", err)
	}
	sqlByName := map[string]string{}
	structs := map[string][]string{}    // Params type → its fields, in order
	signatures := map[string]ast.Expr{} // method → the type of its argument after ctx
	argNames := map[string]string{}     // method → the name of that argument
	for _, f := range files {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			switch d := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					collectSpec(spec, sqlByName, structs)
				}
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Type.Params.List) == 2 {
					arg := d.Type.Params.List[1]
					signatures[d.Name.Name], argNames[d.Name.Name] = arg.Type, arg.Names[0].Name
				}
			}
		}
	}
	queries := make(map[string]generatedQuery, len(sqlByName))
	for name, sql := range sqlByName {
		q := generatedQuery{Name: name, SQL: sql}
		if typ, ok := signatures[name]; ok {
			if id, ok := typ.(*ast.Ident); ok && structs[id.Name] != nil {
				q.Params = structs[id.Name]
			} else {
				q.Params = []string{paramKey(argNames[name])}
			}
		}
		if n := placeholders(sql); n != len(q.Params) {
			t.Fatalf("%s: %d placeholders but %d parameters were found in its method", name, n, len(q.Params))
		}
		queries[name] = q
	}
	return queries
}

func collectSpec(spec ast.Spec, sqlByName map[string]string, structs map[string][]string) {
	switch s := spec.(type) {
	case *ast.ValueSpec:
		if len(s.Values) != 1 {
			return
		}
		lit, ok := s.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		sql, err := strconv.Unquote(lit.Value)
		if m := queryHeader.FindStringSubmatch(sql); err == nil && m != nil {
			sqlByName[m[1]] = sql
		}
	case *ast.TypeSpec:
		st, ok := s.Type.(*ast.StructType)
		if !ok || !strings.HasSuffix(s.Name.Name, "Params") {
			return
		}
		var fields []string
		for _, f := range st.Fields.List {
			for _, n := range f.Names {
				fields = append(fields, paramKey(n.Name))
			}
		}
		structs[s.Name.Name] = fields
	}
}

var (
	queryHeader = regexp.MustCompile(`^-- name: (\w+) :\w+`)
	placeholder = regexp.MustCompile(`\$(\d+)`)
)

// placeholders is the highest $n in sql.
func placeholders(sql string) int {
	n := 0
	for _, m := range placeholder.FindAllStringSubmatch(sql, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	return n
}

// paramKey lets the table below name a parameter as the SQL does (account_id) whatever sqlc
// called it in Go (AccountID in a Params struct, accountID as a lone argument).
func paramKey(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}

// readsRows reports whether a statement reads any table: one without FROM or WHERE (a plain
// INSERT ... VALUES, an advisory lock) has no plan worth checking.
func readsRows(sql string) bool {
	var body []string
	for _, line := range strings.Split(sql, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			body = append(body, line)
		}
	}
	return readsRowsWords.MatchString(strings.Join(body, "\n"))
}

var readsRowsWords = regexp.MustCompile(`(?i)\b(FROM|WHERE)\b`)
