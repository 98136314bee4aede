# ReadPast: one static binary (dashboard, API, workers) on a distroless base.
#
#   docker build -t readpast --build-arg VERSION=1.0.0 .
#   docker run -p 8080:8080 -v readpast-data:/data \
#       -e READPAST_OPERATOR_TOKEN="$(openssl rand -hex 32)" readpast
#
# With no READPAST_DSN override the queue lives in the SQLite file /data/readpast.db,
# on the volume. Point READPAST_DSN at sqlserver://… or postgres://… to use a server.

# --- build -----------------------------------------------------------------
FROM golang:1.26-alpine AS build
WORKDIR /src
# Dependencies first, so code changes do not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# COMMIT and DATE as scripts/release stamps them (`readpast version` prints them):
#   --build-arg COMMIT=$(git rev-parse HEAD) --build-arg DATE=$(git show -s --format=%cI HEAD)
ARG COMMIT=
ARG DATE=
# Pure Go (modernc SQLite, pgx, go-mssqldb): no cgo, a fully static binary.
# The templ output (*_templ.go) is committed, so no templ step is needed.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" -o /out/readpast ./cmd/web
# The data directory, owned by the runtime user (distroless has no shell to make it).
RUN mkdir -p /out/data

# --- run -------------------------------------------------------------------
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/readpast /readpast
COPY --from=build --chown=65532:65532 /out/data /data
# nonroot is uid 65532: the process cannot write outside /data.
USER nonroot:nonroot
WORKDIR /data
VOLUME ["/data"]
ENV READPAST_DSN=/data/readpast.db
# Listening on every interface is needed to be reachable from outside the
# container. ReadPast refuses to start on a non-loopback address without
# credentials: set READPAST_OPERATOR_TOKEN (and optionally READPAST_VIEWER_TOKEN,
# at least 16 characters each) when you run the image. See docs/SECURITY.md.
ENV READPAST_LISTEN=0.0.0.0:8080
EXPOSE 8080
# Probes: GET /healthz (alive) and GET /readyz (store reachable, schema current);
# distroless has no curl, so use your orchestrator's HTTP probes.
ENTRYPOINT ["/readpast"]
CMD ["serve"]
