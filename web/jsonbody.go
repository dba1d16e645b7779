package web

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/labstack/echo/v4"
)

// decodeJSON reads a JSON body strictly (API2): the body is UTF-8;
// field names match exactly (`Nodes` is not `nodes`); unknown and repeated
// fields, wrong types and text with NUL bytes are 422s naming the API's
// field by its JSON path (`storage.persistentGb`, `ports[0]`), never a Go
// type (API2). It returns the raw body (launches hash it).
func decodeJSON(c echo.Context, v any) ([]byte, error) {
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(raw) {
		return nil, invalid(models.FieldErrors{"body": "must be UTF-8 text"})
	}
	if fe, err := checkJSON(raw, reflect.TypeOf(v)); err != nil {
		return nil, notJSON(err)
	} else if len(fe) > 0 {
		return nil, invalid(fe)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		// checkJSON found every mistyped value already; this is a net.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, invalid(models.FieldErrors{apiPath(reflect.TypeOf(v), te.Field): "must be " + apiKindOf(te.Type)})
		}
		return nil, notJSON(err)
	}
	return raw, nil
}

// apiPath is encoding/json's dotted Go path of a field ("QuoteBody.nodes"
// through an embedded struct, "ports.1" for an element) in the API's
// words: embedded structs' names dropped, elements indexed ("ports[1]").
func apiPath(t reflect.Type, field string) string {
	out := ""
	for _, seg := range strings.Split(field, ".") {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil && t.Kind() == reflect.Struct {
			if f, ok := t.FieldByName(seg); ok && f.Anonymous && f.Tag.Get("json") == "" {
				t = f.Type
				continue
			}
		}
		if _, err := strconv.Atoi(seg); err == nil {
			out += "[" + seg + "]"
		} else if out == "" {
			out = seg
		} else {
			out += "." + seg
		}
		var next reflect.Type
		if t != nil {
			switch t.Kind() {
			case reflect.Struct:
				next = wireFields(t)[seg]
			case reflect.Slice, reflect.Array, reflect.Map:
				next = t.Elem()
			}
		}
		t = next
	}
	return orBody(out)
}

func notJSON(error) error {
	return &APIError{Status: http.StatusBadRequest, Code: "bad_request",
		Message: "The body is not valid JSON: send one JSON object, as the API reference shows."}
}

// apiKindOf names what a Go type accepts in the API's words.
func apiKindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// checkJSON walks the body's tokens against t (the decoding target) and
// reports unknown, repeated and NUL-carrying fields by their JSON path.
func checkJSON(raw []byte, t reflect.Type) (models.FieldErrors, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	fe := models.FieldErrors{}
	if err := walkJSON(dec, t, "", fe); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data")
	}
	return fe, nil
}

func walkJSON(dec *json.Decoder, t reflect.Type, path string, fe models.FieldErrors) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && decodesItself(t) {
		t = nil // its own UnmarshalJSON or UnmarshalText decides
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if t != nil && !fits(tok, t) {
		if path == "" {
			return errors.New("the body is not an object")
		}
		if _, ok := fe[path]; !ok {
			fe[path] = "must be " + apiKindOf(t)
		}
		t = nil // the rest of this value is not looked at
	}
	switch tok := tok.(type) {
	case string:
		if strings.ContainsRune(tok, 0) {
			fe[orBody(path)] = "must not contain NUL characters"
		}
	case json.Delim:
		switch tok {
		case '{':
			return walkObject(dec, t, path, fe)
		case '[':
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for i := 0; dec.More(); i++ {
				if err := walkJSON(dec, elem, path+"["+strconv.Itoa(i)+"]", fe); err != nil {
					return err
				}
			}
			_, err := dec.Token()
			return err
		}
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decodesItself reports a type with its own JSON or text decoding.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// fits reports whether the value starting with tok decodes into t, as
// encoding/json would decode it (null fits anything).
func fits(tok json.Token, t reflect.Type) bool {
	k := t.Kind()
	if k == reflect.Interface {
		return true
	}
	switch tok := tok.(type) {
	case nil:
		return true
	case bool:
		return k == reflect.Bool
	case string:
		return k == reflect.String || (k == reflect.Slice && t.Elem().Kind() == reflect.Uint8)
	case json.Number:
		switch k {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			_, err := strconv.ParseInt(tok.String(), 10, t.Bits())
			return err == nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			_, err := strconv.ParseUint(tok.String(), 10, t.Bits())
			return err == nil
		case reflect.Float32, reflect.Float64:
			_, err := strconv.ParseFloat(tok.String(), t.Bits())
			return err == nil
		}
		return false
	case json.Delim:
		if tok == '{' {
			return k == reflect.Struct || k == reflect.Map
		}
		return (k == reflect.Slice && t.Elem().Kind() != reflect.Uint8) || k == reflect.Array
	}
	return false
}

func walkObject(dec *json.Decoder, t reflect.Type, path string, fe models.FieldErrors) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = wireFields(t)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := key
		if path != "" {
			p = path + "." + key
		}
		var ft reflect.Type
		switch {
		case strings.ContainsRune(key, 0):
			fe[orBody(path)] = "field names must not contain NUL characters"
		case seen[key]:
			fe[p] = "is given twice"
		case fields != nil:
			var ok bool
			if ft, ok = fields[key]; !ok {
				fe[p] = "is not a field of this request (names are case-sensitive)"
			}
		case t != nil && t.Kind() == reflect.Map:
			ft = t.Elem()
		}
		seen[key] = true
		if err := walkJSON(dec, ft, p, fe); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

func orBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// wireFields maps a struct's JSON names (with embedded structs' promoted
// fields) to their types.
func wireFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range wireFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
