package models

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSON is a column that holds V as JSON text, on SQLite and PostgreSQL
// alike. Reading a row decodes it: a value that is not V's JSON fails the
// query with an error naming the column's type, instead of reading as an
// empty value. NULL and "" read as V's zero value (rows written before the
// column was filled).
type JSON[T any] struct{ V T }

// JSONOf wraps v for a JSON column.
func JSONOf[T any](v T) JSON[T] { return JSON[T]{V: v} }

// Value writes V as JSON text.
func (j JSON[T]) Value() (driver.Value, error) {
	b, err := json.Marshal(j.V)
	if err != nil {
		return nil, fmt.Errorf("models: JSON column %T: %w", j.V, err)
	}
	return string(b), nil
}

// Scan reads V from the column's JSON text.
func (j *JSON[T]) Scan(src any) error {
	var zero T
	var b []byte
	switch v := src.(type) {
	case nil:
		j.V = zero
		return nil
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		return fmt.Errorf("models: JSON column %T: cannot read a %T", zero, src)
	}
	if len(b) == 0 {
		j.V = zero
		return nil
	}
	v := zero
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("models: JSON column %T holds %.40q: %w", zero, b, err)
	}
	j.V = v
	return nil
}

// MarshalJSON is V's JSON, so a row encodes as if the column were V.
func (j JSON[T]) MarshalJSON() ([]byte, error) { return json.Marshal(j.V) }

// UnmarshalJSON reads V.
func (j *JSON[T]) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &j.V) }
