// Command github-client drives the sandbox's forge with go-github, a GitHub client written by others than
// Tower's authors, the way a GitHub App does: it signs an App JWT, finds the App's installation on the
// organisation, mints an installation token, then lists repositories, reads a file, opens a pull request,
// lists its reviews, check runs and combined status, and follows Link pages with a small page size so
// paging really happens.
//
// It prints one line per thing it checked and exits 1 with "mismatch: …" on the first answer go-github
// could not read or that disagrees with what GitHub documents (2 for bad arguments). The testbed's
// github_client test runs it against a sandbox and checks its lines against the forge's repositories.
package main

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/go-github/v74/github"
)

// config is what the command line says.
type config struct {
	baseURL    string
	appID      int64
	privateKey string
	org        string
	repo       string
	file       string
	from       string
	to         string
	branch     string
	pageSize   int
	wait       time.Duration
}

func main() {
	var cfg config
	flag.StringVar(&cfg.baseURL, "base-url", os.Getenv("GITHUB_API_URL"), "the REST API's base URL, e.g. http://127.0.0.1:8080/github/ (env GITHUB_API_URL)")
	flag.Int64Var(&cfg.appID, "app-id", 0, "the GitHub App's id")
	flag.StringVar(&cfg.privateKey, "private-key-env", "GITHUB_APP_PRIVATE_KEY", "the environment variable holding the App's PEM private key")
	flag.StringVar(&cfg.org, "org", "acme", "the organisation the App is installed on")
	flag.StringVar(&cfg.repo, "repo", "application-repositories", "the repository to read and open a pull request in")
	flag.StringVar(&cfg.file, "file", "", "the file to read, and to change on the pull request's branch")
	flag.StringVar(&cfg.from, "replace", "", "text of -file the pull request replaces")
	flag.StringVar(&cfg.to, "with", "", "what it is replaced with")
	flag.StringVar(&cfg.branch, "branch", "go-github", "the pull request's branch, created off the default branch")
	flag.IntVar(&cfg.pageSize, "per-page", 2, "the page size of every list")
	flag.DurationVar(&cfg.wait, "wait", 60*time.Second, "how long to wait for the pull request's check to complete and its review")
	flag.Parse()
	if cfg.baseURL == "" || cfg.appID == 0 || cfg.file == "" || cfg.from == "" || os.Getenv(cfg.privateKey) == "" {
		fmt.Fprintln(os.Stderr, "usage: github-client -base-url URL -app-id ID -file PATH -replace OLD -with NEW (the key in $"+cfg.privateKey+")")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.wait+60*time.Second)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintf(os.Stderr, "mismatch: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run(ctx context.Context, cfg config) error {
	base, err := url.Parse(strings.TrimSuffix(cfg.baseURL, "/") + "/")
	if err != nil {
		return fmt.Errorf("base URL %q: %w", cfg.baseURL, err)
	}
	client := func(token string) *github.Client {
		c := github.NewClient(nil).WithAuthToken(token)
		c.BaseURL = base
		c.UploadURL = base
		return c
	}

	// The App, as Tower authenticates: a JWT for the App, then an installation token.
	jwt, err := appJWT(cfg.appID, os.Getenv(cfg.privateKey))
	if err != nil {
		return err
	}
	asApp := client(jwt)
	app, _, err := asApp.Apps.Get(ctx, "")
	if err != nil {
		return fmt.Errorf("GET /app: %w", err)
	}
	if app.GetID() != cfg.appID || app.GetSlug() == "" {
		return fmt.Errorf("GET /app: id %d slug %q, want id %d and a slug", app.GetID(), app.GetSlug(), cfg.appID)
	}
	installation, _, err := asApp.Apps.FindOrganizationInstallation(ctx, cfg.org)
	if err != nil {
		return fmt.Errorf("GET /orgs/%s/installation: %w", cfg.org, err)
	}
	if installation.GetAppID() != cfg.appID || !strings.EqualFold(installation.GetAccount().GetLogin(), cfg.org) {
		return fmt.Errorf("installation %d: app %d on %q, want app %d on %q", installation.GetID(),
			installation.GetAppID(), installation.GetAccount().GetLogin(), cfg.appID, cfg.org)
	}
	token, _, err := asApp.Apps.CreateInstallationToken(ctx, installation.GetID(), nil)
	if err != nil {
		return fmt.Errorf("POST /app/installations/%d/access_tokens: %w", installation.GetID(), err)
	}
	if token.GetToken() == "" || token.GetExpiresAt().Before(time.Now()) {
		return fmt.Errorf("installation token: %q expiring %v", token.GetToken(), token.GetExpiresAt())
	}
	fmt.Printf("app: %s (%d), installation %d, token expires in %s\n", app.GetSlug(), app.GetID(),
		installation.GetID(), time.Until(token.GetExpiresAt().Time).Round(time.Minute))
	gh := client(token.GetToken())

	// Repositories, page by page, twice: the installation's and the organisation's.
	installed, pages, err := collect(func(page int) ([]*github.Repository, *github.Response, error) {
		list, resp, err := gh.Apps.ListRepos(ctx, &github.ListOptions{Page: page, PerPage: cfg.pageSize})
		if list == nil {
			return nil, resp, err
		}
		if list.GetTotalCount() < len(list.Repositories) {
			return nil, resp, fmt.Errorf("total_count %d below a page of %d", list.GetTotalCount(), len(list.Repositories))
		}
		return list.Repositories, resp, err
	})
	if err != nil {
		return fmt.Errorf("GET /installation/repositories: %w", err)
	}
	orgRepos, orgPages, err := collect(func(page int) ([]*github.Repository, *github.Response, error) {
		return gh.Repositories.ListByOrg(ctx, cfg.org, &github.RepositoryListByOrgOptions{
			ListOptions: github.ListOptions{Page: page, PerPage: cfg.pageSize},
		})
	})
	if err != nil {
		return fmt.Errorf("GET /orgs/%s/repos: %w", cfg.org, err)
	}
	names := map[string]bool{}
	for _, r := range installed {
		if names[r.GetFullName()] {
			return fmt.Errorf("GET /installation/repositories: %s on two pages", r.GetFullName())
		}
		names[r.GetFullName()] = true
	}
	for _, r := range orgRepos {
		if !names[r.GetFullName()] {
			return fmt.Errorf("GET /orgs/%s/repos lists %s, the installation's repositories do not", cfg.org, r.GetFullName())
		}
	}
	full := cfg.org + "/" + cfg.repo
	if !names[full] || len(orgRepos) != len(installed) {
		return fmt.Errorf("repositories: %d installed, %d in the organisation, %s among them: %v",
			len(installed), len(orgRepos), full, names[full])
	}
	if pages < 2 || orgPages < 2 {
		return fmt.Errorf("repositories came in %d and %d pages of %d: no paging happened", pages, orgPages, cfg.pageSize)
	}
	fmt.Printf("repositories: %d over %d pages (organisation: %d pages)\n", len(installed), pages, orgPages)

	// The repository and one file of it.
	repo, _, err := gh.Repositories.Get(ctx, cfg.org, cfg.repo)
	if err != nil {
		return fmt.Errorf("GET /repos/%s: %w", full, err)
	}
	defaultBranch := repo.GetDefaultBranch()
	if defaultBranch == "" || repo.GetFullName() != full || repo.GetOwner().GetLogin() != cfg.org {
		return fmt.Errorf("GET /repos/%s: full_name %q, owner %q, default branch %q", full,
			repo.GetFullName(), repo.GetOwner().GetLogin(), defaultBranch)
	}
	file, _, _, err := gh.Repositories.GetContents(ctx, cfg.org, cfg.repo, cfg.file,
		&github.RepositoryContentGetOptions{Ref: defaultBranch})
	if err != nil {
		return fmt.Errorf("GET contents/%s: %w", cfg.file, err)
	}
	if file == nil {
		return fmt.Errorf("GET contents/%s: a directory, not a file", cfg.file)
	}
	content, err := file.GetContent()
	if err != nil {
		return fmt.Errorf("contents/%s: %w", cfg.file, err)
	}
	if file.GetPath() != cfg.file || file.GetSize() != len(content) || file.GetType() != "file" {
		return fmt.Errorf("contents/%s: path %q, type %q, size %d for %d bytes", cfg.file, file.GetPath(),
			file.GetType(), file.GetSize(), len(content))
	}
	blob, _, err := gh.Git.GetBlob(ctx, cfg.org, cfg.repo, file.GetSHA())
	if err != nil {
		return fmt.Errorf("GET git/blobs/%s: %w", file.GetSHA(), err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(blob.GetContent(), "\n", ""))
	if err != nil || string(raw) != content {
		return fmt.Errorf("git/blobs/%s is not the file's content (%v)", file.GetSHA(), err)
	}
	if !strings.Contains(content, cfg.from) {
		return fmt.Errorf("contents/%s has no %q", cfg.file, cfg.from)
	}
	fmt.Printf("file: %s blob %s, %d bytes\n", cfg.file, file.GetSHA(), len(content))

	// A pull request: a branch off the default one, the file changed on it, and the pull request.
	head, _, err := gh.Git.GetRef(ctx, cfg.org, cfg.repo, "heads/"+defaultBranch)
	if err != nil {
		return fmt.Errorf("GET git/ref/heads/%s: %w", defaultBranch, err)
	}
	_, _, err = gh.Git.CreateRef(ctx, cfg.org, cfg.repo, &github.Reference{
		Ref:    github.Ptr("refs/heads/" + cfg.branch),
		Object: &github.GitObject{SHA: head.GetObject().SHA},
	})
	if err != nil {
		return fmt.Errorf("POST git/refs (refs/heads/%s): %w", cfg.branch, err)
	}
	changed, _, err := gh.Repositories.UpdateFile(ctx, cfg.org, cfg.repo, cfg.file, &github.RepositoryContentFileOptions{
		Message: github.Ptr("Change " + cfg.file + " with go-github"),
		Content: []byte(strings.Replace(content, cfg.from, cfg.to, 1)),
		SHA:     file.SHA,
		Branch:  github.Ptr(cfg.branch),
	})
	if err != nil {
		return fmt.Errorf("PUT contents/%s on %s: %w", cfg.file, cfg.branch, err)
	}
	commit := changed.Commit.GetSHA()
	if commit == "" || len(changed.Commit.Parents) != 1 || changed.Commit.Parents[0].GetSHA() != head.GetObject().GetSHA() {
		return fmt.Errorf("PUT contents/%s: commit %q, parents %v, want one parent %s", cfg.file, commit,
			changed.Commit.Parents, head.GetObject().GetSHA())
	}
	pull, _, err := gh.PullRequests.Create(ctx, cfg.org, cfg.repo, &github.NewPullRequest{
		Title: github.Ptr("Change " + cfg.file),
		Head:  github.Ptr(cfg.branch),
		Base:  github.Ptr(defaultBranch),
		Body:  github.Ptr("Opened by go-github."),
	})
	if err != nil {
		return fmt.Errorf("POST pulls: %w", err)
	}
	number := pull.GetNumber()
	if pull.GetState() != "open" || pull.GetHead().GetSHA() != commit || pull.GetHead().GetRef() != cfg.branch ||
		pull.GetBase().GetRef() != defaultBranch || pull.GetUser().GetLogin() == "" {
		return fmt.Errorf("POST pulls: #%d state %q head %s@%s base %q by %q", number, pull.GetState(),
			pull.GetHead().GetRef(), pull.GetHead().GetSHA(), pull.GetBase().GetRef(), pull.GetUser().GetLogin())
	}
	files, _, err := gh.PullRequests.ListFiles(ctx, cfg.org, cfg.repo, number, nil)
	if err != nil {
		return fmt.Errorf("GET pulls/%d/files: %w", number, err)
	}
	if len(files) != 1 || files[0].GetFilename() != cfg.file || files[0].GetStatus() != "modified" {
		return fmt.Errorf("GET pulls/%d/files: %d files, want %s modified", number, len(files), cfg.file)
	}
	fmt.Printf("pull: #%d %s -> %s at %s by %s\n", number, cfg.branch, defaultBranch, commit, pull.GetUser().GetLogin())

	// A commit status of our own, then the combined status.
	_, _, err = gh.Repositories.CreateStatus(ctx, cfg.org, cfg.repo, commit, &github.RepoStatus{
		State:       github.Ptr("success"),
		Context:     github.Ptr("go-github / smoke"),
		Description: github.Ptr("The second client was here"),
		TargetURL:   github.Ptr("https://example.com/go-github"),
	})
	if err != nil {
		return fmt.Errorf("POST statuses/%s: %w", commit, err)
	}
	combined, _, err := gh.Repositories.GetCombinedStatus(ctx, cfg.org, cfg.repo, commit, nil)
	if err != nil {
		return fmt.Errorf("GET commits/%s/status: %w", commit, err)
	}
	if combined.GetSHA() != commit || combined.GetState() != "success" || combined.GetTotalCount() != 1 ||
		len(combined.Statuses) != 1 || combined.Statuses[0].GetContext() != "go-github / smoke" {
		return fmt.Errorf("GET commits/%s/status: sha %s, state %q, %d statuses", commit, combined.GetSHA(),
			combined.GetState(), combined.GetTotalCount())
	}
	fmt.Printf("combined status: %s, %d status\n", combined.GetState(), combined.GetTotalCount())

	// The forge's CI check on the head, until it completes, and the review that follows it.
	deadline := time.Now().Add(cfg.wait)
	var check *github.CheckRun
	for check == nil || check.GetStatus() != "completed" {
		if time.Now().After(deadline) {
			return fmt.Errorf("no completed check run on %s within %s (last: %v)", commit, cfg.wait, describe(check))
		}
		runs, _, err := gh.Checks.ListCheckRunsForRef(ctx, cfg.org, cfg.repo, commit,
			&github.ListCheckRunsOptions{ListOptions: github.ListOptions{PerPage: cfg.pageSize}})
		if err != nil {
			return fmt.Errorf("GET commits/%s/check-runs: %w", commit, err)
		}
		if runs.GetTotal() != len(runs.CheckRuns) {
			return fmt.Errorf("GET commits/%s/check-runs: total_count %d for %d runs", commit, runs.GetTotal(), len(runs.CheckRuns))
		}
		for _, run := range runs.CheckRuns {
			if run.GetHeadSHA() != commit {
				return fmt.Errorf("check run %d is on %s, not %s", run.GetID(), run.GetHeadSHA(), commit)
			}
			check = run
		}
		if check.GetStatus() != "completed" {
			time.Sleep(250 * time.Millisecond)
		}
	}
	if len(check.PullRequests) != 1 || check.PullRequests[0].GetNumber() != number {
		return fmt.Errorf("check run %d names pull requests %v, want #%d", check.GetID(), check.PullRequests, number)
	}
	fmt.Printf("check: %s %s %s\n", check.GetName(), check.GetStatus(), check.GetConclusion())

	var reviews []*github.PullRequestReview
	for len(reviews) == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("no review of #%d within %s", number, cfg.wait)
		}
		reviews, _, err = collect(func(page int) ([]*github.PullRequestReview, *github.Response, error) {
			return gh.PullRequests.ListReviews(ctx, cfg.org, cfg.repo, number, &github.ListOptions{Page: page, PerPage: cfg.pageSize})
		})
		if err != nil {
			return fmt.Errorf("GET pulls/%d/reviews: %w", number, err)
		}
		if len(reviews) == 0 {
			time.Sleep(250 * time.Millisecond)
		}
	}
	for _, review := range reviews {
		if review.GetCommitID() != commit || review.GetUser().GetLogin() == "" || review.GetSubmittedAt().IsZero() {
			return fmt.Errorf("review %d: commit %q by %q at %v", review.GetID(), review.GetCommitID(),
				review.GetUser().GetLogin(), review.GetSubmittedAt())
		}
		fmt.Printf("review: %s by %s\n", review.GetState(), review.GetUser().GetLogin())
	}

	// Commits of the default branch, following the Link header's pages.
	commits, commitPages, err := collect(func(page int) ([]*github.RepositoryCommit, *github.Response, error) {
		return gh.Repositories.ListCommits(ctx, cfg.org, cfg.repo, &github.CommitsListOptions{
			SHA:         defaultBranch,
			ListOptions: github.ListOptions{Page: page, PerPage: cfg.pageSize},
		})
	})
	if err != nil {
		return fmt.Errorf("GET commits: %w", err)
	}
	seen := map[string]bool{}
	for _, c := range commits {
		if seen[c.GetSHA()] {
			return fmt.Errorf("GET commits: %s on two pages", c.GetSHA())
		}
		seen[c.GetSHA()] = true
	}
	if len(commits) == 0 || commits[0].GetSHA() != head.GetObject().GetSHA() {
		return fmt.Errorf("GET commits: %d commits, want %s, the head of %s, first", len(commits),
			head.GetObject().GetSHA(), defaultBranch)
	}
	if commitPages < 2 {
		return fmt.Errorf("GET commits: %d commits in %d page of %d: no paging happened", len(commits),
			commitPages, cfg.pageSize)
	}
	fmt.Printf("commits: %d over %d pages\n", len(commits), commitPages)
	return nil
}

// collect follows a list's pages from the first, as go-github reads them from the Link header, until there
// is no next one; it returns every item and how many pages there were. A next page that does not move
// forward, or a page beyond the size asked for, is a mismatch.
func collect[T any](list func(page int) ([]T, *github.Response, error)) ([]T, int, error) {
	var all []T
	page, pages := 1, 0
	const most = 500
	for {
		items, resp, err := list(page)
		if err != nil {
			return nil, pages, err
		}
		pages++
		all = append(all, items...)
		if resp.NextPage == 0 {
			return all, pages, nil
		}
		if resp.NextPage <= page || pages >= most {
			return nil, pages, fmt.Errorf("the Link header's next page is %d after page %d", resp.NextPage, page)
		}
		if len(items) == 0 {
			return nil, pages, fmt.Errorf("page %d is empty yet names a next page", page)
		}
		page = resp.NextPage
	}
}

// describe is a check run in a few words, for a message.
func describe(run *github.CheckRun) string {
	if run == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s", run.GetName(), run.GetStatus())
}

// appJWT is an RS256 JWT for the App, as GitHub wants one: issued a minute ago (clocks drift), expiring
// in nine minutes (the most is ten), issued by the App's id.
func appJWT(appID int64, privateKeyPEM string) (string, error) {
	block, _ := pem.Decode([]byte(privateKeyPEM))
	if block == nil {
		return "", errors.New("the App's private key is not PEM")
	}
	var key *rsa.PrivateKey
	if parsed, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		key = parsed
	} else if parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		rsaKey, ok := parsed.(*rsa.PrivateKey)
		if !ok {
			return "", errors.New("the App's private key is not an RSA key")
		}
		key = rsaKey
	} else {
		return "", fmt.Errorf("the App's private key: %w", err)
	}
	now := time.Now()
	segment := func(value any) (string, error) {
		data, err := json.Marshal(value)
		return base64.RawURLEncoding.EncodeToString(data), err
	}
	header, err := segment(map[string]string{"alg": "RS256", "typ": "JWT"})
	if err != nil {
		return "", err
	}
	claims, err := segment(map[string]any{
		"iat": now.Add(-time.Minute).Unix(),
		"exp": now.Add(9 * time.Minute).Unix(),
		"iss": fmt.Sprint(appID),
	})
	if err != nil {
		return "", err
	}
	digest := sha256.Sum256([]byte(header + "." + claims))
	signature, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		return "", err
	}
	return header + "." + claims + "." + base64.RawURLEncoding.EncodeToString(signature), nil
}
