# Builds the broker as README.md does (`mvn -B -q package -DskipTests -pl broker -am`, the command of
# bin/sluice) and runs the same jar. These development machines have no container engine, so
# DockerfileTest keeps this file in step with README and DockerEntrypointIT runs docker/entrypoint.sh
# against the packaged jar.
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
# The poms alone first: the dependency layer is built again only when a pom changes, not on every source edit.
COPY pom.xml ./
COPY storage/pom.xml storage/
COPY client/pom.xml client/
COPY broker/pom.xml broker/
COPY bench/pom.xml bench/
RUN mvn -B -q dependency:go-offline -pl broker -am -DexcludeGroupIds=io.sluice
COPY config config
COPY storage/src storage/src
COPY client/src client/src
COPY broker/src broker/src
RUN mvn -B -q package -DskipTests -pl broker -am

FROM eclipse-temurin:17-jre
RUN groupadd --system sluice \
    && useradd --system --gid sluice --home-dir /opt/sluice --no-create-home sluice \
    && mkdir -p /var/lib/sluice /etc/sluice \
    && chown sluice:sluice /var/lib/sluice
WORKDIR /opt/sluice
COPY --from=build /src/broker/target/sluice-broker-0.1.0-SNAPSHOT.jar ./sluice-broker.jar
COPY --from=build /src/broker/target/lib ./lib
COPY docker/entrypoint.sh docker/healthcheck.sh bin/sluice-jvm-options ./
# The class archive (docs/operations.md, "Start-up and the class archive"), made here by the image's own JVM from
# the image's own jar, so that every container maps it from its first start and none runs a training of its own.
# A training run that fails leaves no archive and does not fail the build: the broker then starts without one.
RUN java -XX:ArchiveClassesAtExit=/opt/sluice/sluice-broker.jsa -jar /opt/sluice/sluice-broker.jar class-archive-training \
        > /tmp/class-archive-training.log 2>&1 \
    || { cat /tmp/class-archive-training.log; rm -f /opt/sluice/sluice-broker.jsa; }; rm -f /tmp/class-archive-training.log
USER sluice
VOLUME /var/lib/sluice
# 7672: clients; 7673: /metrics, /health and the admin API (both need the users the entry point requires).
EXPOSE 7672 7673
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["/opt/sluice/healthcheck.sh", "7673"]
# The entry point starts the JVM with bin/sluice's options (sluice-jvm-options; SLUICE_JAVA_OPTS=-Xmx... overrides).
ENTRYPOINT ["/opt/sluice/entrypoint.sh"]
