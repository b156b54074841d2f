# The Rollout Engine's image: the release tarball (modules/dist) on a Java 21 runtime, run as a
# non-root user. Build from the repository's root:
#   docker build -t rollout:0.1.0-SNAPSHOT .
#   docker run --rm rollout:0.1.0-SNAPSHOT --version
#   docker run --rm -e ROLLOUT_GATEWAY_TOKEN=... -p 8470:8470 -p 8558:8558 rollout:0.1.0-SNAPSHOT node --host 0.0.0.0 --gateway-host 0.0.0.0 ...   (beyond loopback the gateway needs a token)
# ROLLOUT_VERSION must be the project's version (pom.xml): the tarball is rollout-${ROLLOUT_VERSION}.tar.gz.
ARG ROLLOUT_VERSION=0.1.0-SNAPSHOT

FROM maven:3.9-eclipse-temurin-21 AS build
ARG ROLLOUT_VERSION
WORKDIR /src
COPY . .
RUN mvn -B -ntp -DskipTests package -pl modules/dist -am \
 && mkdir -p /opt/rollout \
 && tar -xzf modules/dist/target/rollout-${ROLLOUT_VERSION}.tar.gz -C /opt/rollout --strip-components=1

FROM eclipse-temurin:21-jre
RUN groupadd --system --gid 10001 rollout \
 && useradd --system --uid 10001 --gid rollout --home-dir /var/lib/rollout --create-home rollout
COPY --from=build /opt/rollout /opt/rollout
USER 10001:10001
WORKDIR /var/lib/rollout
ENV PATH=/opt/rollout/bin:$PATH
# 25520: cluster (Artery), 8470: trainer gateway, 8558: management (health checks, bootstrap)
EXPOSE 25520 8470 8558
ENTRYPOINT ["/opt/rollout/bin/rollout"]
CMD ["--help"]
