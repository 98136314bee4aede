// Package static holds the dashboard's stylesheet and its little live-update
// script, embedded in the binary and served at content-hashed URLs so browsers
// may cache them for a year.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"path"
	"strings"
)

//go:embed *.css *.js
var files embed.FS

// Asset is one embedded file.
type Asset struct {
	Name        string // as in the repository, e.g. app.css
	HashedName  string // e.g. app.3f2a91c0d4.css: changes whenever the content does
	ContentType string
	ETag        string
	Content     []byte
}

// Prefix is the URL path the assets are served under.
const Prefix = "/static/"

var (
	byName   = map[string]*Asset{}
	byHashed = map[string]*Asset{}
)

func init() {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		hash := hex.EncodeToString(sum[:5])
		ext := path.Ext(e.Name())
		a := &Asset{
			Name:        e.Name(),
			HashedName:  strings.TrimSuffix(e.Name(), ext) + "." + hash + ext,
			ContentType: mime.TypeByExtension(ext),
			ETag:        `"` + hash + `"`,
			Content:     b,
		}
		if a.ContentType == "" {
			a.ContentType = "application/octet-stream"
		}
		byName[a.Name] = a
		byHashed[a.HashedName] = a
	}
}

// URL is the content-hashed URL of the named asset; it panics on an unknown
// name, which is a programming error caught by any page test.
func URL(name string) string {
	a, ok := byName[name]
	if !ok {
		panic("static: no asset named " + name)
	}
	return Prefix + a.HashedName
}

// Lookup finds an asset by its hashed name (the last element of its URL).
func Lookup(hashedName string) (*Asset, bool) {
	a, ok := byHashed[hashedName]
	return a, ok
}
