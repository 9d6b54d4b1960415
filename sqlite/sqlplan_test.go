package sqlite

// How SQLite compiled a statement, for the tests that keep the hot
// statements free of costly plans.

import (
	"database/sql"
	"fmt"
	"strings"
)

// temporaryTables counts the temporary b-trees (OpenEphemeral) that query
// opens each time it runs. An IN list of three or more values in a CHECK
// constraint or a partial index condition, and a RETURNING clause, each
// build one per execution. Parameters are bound to NULL; nothing is run.
func temporaryTables(db *sql.DB, query string) (int, error) {
	rows, err := db.Query(`EXPLAIN `+query, make([]any, strings.Count(query, "?"))...)
	if err != nil {
		return 0, fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		if string(vals[1]) == "OpenEphemeral" {
			n++
		}
	}
	return n, rows.Err()
}

// queryPlan returns the detail lines of EXPLAIN QUERY PLAN for query (how each
// table is searched: "SEARCH events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)").
// Parameters are bound to NULL; nothing is run.
func queryPlan(db *sql.DB, query string) ([]string, error) {
	rows, err := db.Query(`EXPLAIN QUERY PLAN `+query, make([]any, strings.Count(query, "?"))...)
	if err != nil {
		return nil, fmt.Errorf("explain query plan: %w", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return nil, err
		}
		lines = append(lines, detail)
	}
	return lines, rows.Err()
}
