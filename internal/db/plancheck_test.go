package db_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// planNode is one node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType         string     `json:"Node Type"`
	RelationName     string     `json:"Relation Name"`
	IndexName        string     `json:"Index Name"`
	IndexCond        string     `json:"Index Cond"`
	SharedHitBlocks  int64      `json:"Shared Hit Blocks"`
	SharedReadBlocks int64      `json:"Shared Read Blocks"`
	Plans            []planNode `json:"Plans"`
}

// scan is how a plan reads one table.
type scan struct {
	Table, Index string
	Cond         string // the Index Cond; empty for a scan without an index
	Node         string
}

// scans lists every table read in the plan rooted at n. A ModifyTable node is left out: the
// rows it changes are the ones its child scan finds.
func scans(n planNode) []scan {
	var out []scan
	switch {
	case n.NodeType == "Bitmap Heap Scan":
		for _, child := range n.Plans {
			out = append(out, scan{Table: n.RelationName, Index: child.IndexName, Cond: child.IndexCond, Node: n.NodeType + " / " + child.NodeType})
		}
		return out
	case n.NodeType == "ModifyTable":
	case n.RelationName != "":
		out = append(out, scan{Table: n.RelationName, Index: n.IndexName, Cond: n.IndexCond, Node: n.NodeType})
	}
	for _, child := range n.Plans {
		out = append(out, scans(child)...)
	}
	return out
}

// sorts reports whether the plan rooted at n sorts rows.
func sorts(n planNode) bool {
	if strings.HasSuffix(n.NodeType, "Sort") {
		return true
	}
	return slices.ContainsFunc(n.Plans, sorts)
}

// problem says what is wrong with s for a lookup whose index must lead with key (the
// query's equality columns on that table), or "" if nothing is: s must be an index scan
// whose Index Cond tests exactly the key columns for equality, and the index's first
// columns must be exactly those. An Index Cond on a strict prefix of the key is the range
// walk this test exists for: it reads every entry under the prefix (every row of the
// account) and filters the rest.
func problem(s scan, key []string, indexes map[string][]string) string {
	switch {
	case key == nil:
		return fmt.Sprintf("%s reads %s, which its entry in lookups does not name", s.Node, s.Table)
	case s.Index == "":
		return fmt.Sprintf("%s on %s, not an index lookup on %v", s.Node, s.Table, key)
	}
	eq := equalityColumns(s.Cond)
	columns := indexes[s.Index]
	if !sameSet(eq, key) {
		return fmt.Sprintf("%s on %s uses %s (%s) with Index Cond %s: it tests %v for equality, not exactly %v",
			s.Node, s.Table, s.Index, strings.Join(columns, ", "), s.Cond, eq, key)
	}
	if len(columns) < len(key) || !sameSet(columns[:len(key)], key) {
		return fmt.Sprintf("%s on %s uses %s (%s), which does not lead with %v",
			s.Node, s.Table, s.Index, strings.Join(columns, ", "), key)
	}
	return ""
}

// pageProblem says what is wrong with the scan of a keyset page, or "" if nothing is: its
// Index Cond must bound (created_at, id) by the cursor, so the scan starts at the page. A
// cursor tested only in a Filter (as "@after IS NULL OR ..." is, in a generic plan) has the
// scan read every row before the page: a page 10,000 rows deep reads 10,000 rows.
func pageProblem(s scan) string {
	if cursorBound.MatchString(s.Cond) {
		return ""
	}
	return fmt.Sprintf("%s on %s uses %s with Index Cond %s: the cursor (created_at, id) does not bound the scan, "+
		"so a deep page reads every row before it", s.Node, s.Table, s.Index, s.Cond)
}

var cursorBound = regexp.MustCompile(`ROW\((\w+\.)?created_at, (\w+\.)?id\) [<>] `)

// equalityColumns are the columns an Index Cond such as
// "((account_id = $1) AND (id = $2))" or "(delivery_id = ANY ($2))" tests for equality
// (against a parameter or another table's column, in a join). Range tests are left out.
func equalityColumns(cond string) []string {
	var cols []string
	for _, clause := range splitAnd(unwrap(cond)) {
		if m := equalityClause.FindStringSubmatch(unwrap(clause)); m != nil {
			cols = append(cols, m[1])
		}
	}
	return cols
}

var equalityClause = regexp.MustCompile(`^\(?(\w+)\)?(?:::\w+)? = `)

// unwrap removes the parentheses around the whole of s, if they are one pair.
func unwrap(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return s
	}
	depth := 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i < len(s)-1 {
				return s // the first parenthesis closes before the end: not one pair
			}
		}
	}
	return s[1 : len(s)-1]
}

// splitAnd splits s at the ANDs outside parentheses.
func splitAnd(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		}
		if depth == 0 && strings.HasPrefix(s[i:], " AND ") {
			parts = append(parts, s[start:i])
			start = i + len(" AND ")
		}
	}
	return append(parts, s[start:])
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(a, b)
}

// literal renders v as an SQL literal for EXECUTE's arguments: untyped, so PostgreSQL
// casts it to the type the statement inferred for that parameter.
func literal(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case []string:
		quoted := make([]string, len(v))
		for i, s := range v {
			quoted[i] = `"` + s + `"`
		}
		return literal("{" + strings.Join(quoted, ",") + "}")
	default:
		return literal(fmt.Sprint(v))
	}
}
