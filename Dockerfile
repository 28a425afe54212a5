# The ringfire image: one static binary on a distroless base, run as a
# non-root user (the StatefulSet in deploy/ringfire expects uid 65532).
#   docker build --build-arg VERSION=v0.4.0 -t ghcr.io/ringfire/ringfire:v0.4.0 .
FROM golang:1.26 AS build
ARG VERSION=devel
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/ringfire/ringfire/internal/version.stamped=${VERSION}" -o /out/ringfire ./cmd/ringfire

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ringfire /ringfire
USER 65532:65532
ENTRYPOINT ["/ringfire"]
