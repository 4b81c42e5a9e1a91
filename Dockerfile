# Builds and runs the broker exactly as README.md does: `mvn package`, then `java -jar`.
# (These development machines have no container engine, so this file is kept in step with README by hand.)
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN mvn -B -q package -DskipTests -pl broker -am

FROM eclipse-temurin:17-jre
WORKDIR /opt/sluice
COPY --from=build /src/broker/target/sluice-broker-0.1.0-SNAPSHOT.jar ./
COPY --from=build /src/broker/target/lib ./lib
VOLUME /var/lib/sluice
EXPOSE 7672
# Listening beyond loopback inside the container; put authentication on before exposing it (docs/security.md).
ENTRYPOINT ["java", "-jar", "sluice-broker-0.1.0-SNAPSHOT.jar", "--data-dir", "/var/lib/sluice", "--listen", "0.0.0.0"]
