module tower.dev/testbed/github-client

go 1.26.0

require github.com/google/go-github/v74 v74.0.0

require github.com/google/go-querystring v1.1.0 // indirect
