package ui

import (
	"os"
	"testing"

	"readpast/internal/testenv"
)

// TestMain stops the PostgreSQL server the tests share once they are done.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }
