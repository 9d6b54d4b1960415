package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// engines are the directories holding a store engine: the only Go files,
// tests aside, that may import database/sql or a driver, or hold SQL.
var engines = []string{"sqlite", "postgres"}

// sqlText matches what reads as SQL: statements, and the fragments a
// package could build one from (a status test, a NULL test, an index hint).
var sqlText = regexp.MustCompile(`\bSELECT\b[\s\S]+\bFROM\b|\bINSERT\s+(OR\s+[A-Z]+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b|` +
	`\b(CREATE|DROP)\s+(TABLE|INDEX|TRIGGER|VIEW)\b|\bALTER\s+TABLE\b|\bPRAGMA\s+\w+|\b(SAVEPOINT|RELEASE|ROLLBACK\s+TO)\s+\w+|` +
	`\bBEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)\b|\bIS\s+(NOT\s+)?NULL\b|\bINDEXED\s+BY\b|\bjson_each\(|\w+\s*(=|!=|<=?|>=?)\s*('[^']*'|\?)\s+(AND|OR)\b`)

// forbiddenImport reports whether path is the database/sql package or a
// database driver.
func forbiddenImport(path string) bool {
	return path == "database/sql" || strings.HasPrefix(path, "database/sql/") ||
		strings.HasPrefix(path, "modernc.org/sqlite") || strings.HasPrefix(path, "github.com/jackc/pgx") || path == "github.com/lib/pq"
}

// The store's SQL stays in its engine: no package outside it imports
// database/sql or a driver, or holds SQL text; the logic packages reach the
// store only through the interfaces they declare (README, "Layout").
func TestSeam_SQLOnlyInTheEngine(t *testing.T) {
	for _, s := range []string{
		`SELECT id FROM events WHERE id = ?`,
		"UPDATE deliveries SET status = 'done' WHERE id = ?",
		`INSERT OR IGNORE INTO deliveries (event) VALUES (?)`,
		`(status = 'pending' OR status = 'retrying' OR status = 'running')`,
		`e.swept_at IS NOT NULL`,
		`FROM deliveries INDEXED BY deliveries_due`,
		`PRAGMA journal_mode`,
		`DELETE FROM events`,
	} {
		if !sqlText.MatchString(s) {
			t.Errorf("the SQL check misses %q", s)
		}
	}
	for _, s := range []string{
		"replay: select an event, the dead letters or a period",
		"store is closed",
		"open store: synchronous %q: want full, normal or off",
		"update the config and restart: there is no reload",
	} {
		if sqlText.MatchString(s) {
			t.Errorf("the SQL check takes %q for SQL", s)
		}
	}

	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			for _, e := range engines {
				if path == e {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); forbiddenImport(p) {
				t.Errorf("%s imports %s: only a store engine (%s) may", path, p, strings.Join(engines, ", "))
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil {
				if m := sqlText.FindString(s); m != "" {
					t.Errorf("%s holds SQL (%q): it belongs in a store engine (%s), behind a domain method", path, m, strings.Join(engines, ", "))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d Go files, want the module's", checked)
	}
}
