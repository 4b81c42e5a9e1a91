package io.sluice.broker.admin;

import io.sluice.broker.auth.PasswordHasher;
import io.sluice.broker.metrics.MetricsFixture;
import io.sluice.client.Connection;
import io.sluice.client.Producer;
import io.sluice.client.ProducerOptions;
import io.sluice.protocol.QueueSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TimeoutException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedCondition;
import org.openqa.selenium.support.ui.WebDriverWait;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The web console in a real browser: Debian's headless Chromium driven through its chromium-driver
 * (both installed by .ci/run; without them this test fails, it does not skip). It asserts what a
 * person sees: the login form of a broker with users, a queue's backlog after publishing, the
 * BLOCKED badge and its reason while a hard quota stops a producer, the queue page with its settings
 * and chart, a confirmed purge, and a monitor-only user who sees one queue and is refused a purge
 * with the API's sentence. Leaves screenshots in target/console/: console.png, the queue list with
 * the blocked queue (docs/img/console.png is a copy), and queue.png, a queue's page.
 */
@Tag("slow")
@Timeout(180)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleBrowserTest {
    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    private static final Duration WAIT = Duration.ofSeconds(30);

    private MetricsFixture fixture;
    private WebDriver browser;
    private Connection producerConnection;
    private CompletableFuture<Void> heldByQuota;

    @BeforeAll
    void start(@TempDir Path dir) throws Exception {
        if (!Files.isExecutable(CHROMIUM) || !Files.isExecutable(CHROMEDRIVER)) {
            fail(CHROMIUM + " or " + CHROMEDRIVER + " is missing: install the Debian packages chromium and"
                    + " chromium-driver (apt-get install -y chromium chromium-driver, as .ci/run does)");
        }
        String hash = PasswordHasher.hash("s3cret".toCharArray());
        Path config = dir.resolve("sluice.yaml");
        Files.writeString(config, """
                auth:
                  allow-anonymous: false
                  users:
                    - name: ops
                      password-hash: "%1$s"
                      permissions:
                        - queues: "*"
                          actions: [publish, consume, manage]
                    - name: watcher
                      password-hash: "%1$s"
                      permissions:
                        - queues: "jobs"
                          actions: [monitor]
                """.formatted(hash));
        fixture = new MetricsFixture(dir.resolve("data"), config, Map.of());

        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,900", "--user-data-dir=" + dir.resolve("chromium-profile"));
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort().build();
        browser = new ChromeDriver(service, options);
        browser.manage().timeouts().pageLoadTimeout(WAIT).scriptTimeout(WAIT);
    }

    @AfterAll
    void stop() {
        if (browser != null) {
            browser.quit();
        }
        if (producerConnection != null) {
            producerConnection.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    @Test
    @Order(1)
    void shouldAskForCredentialsAndRefuseAWrongPassword() {
        browser.get(fixture.baseUrl() + "/");
        WebElement form = await("the login form", d -> displayed(d, By.id("login")));
        assertTrue(form.isDisplayed());
        logIn("ops", "wrong");
        String error = await("the refusal", d -> {
            String text = d.findElement(By.id("login-error")).getText();
            return text.isEmpty() ? null : text;
        });
        assertTrue(error.contains("ops"), error);
        logIn("ops", "s3cret");
        await("the queue table", d -> displayed(d, By.cssSelector("#queues table")));
        assertFalse(browser.findElement(By.id("login")).isDisplayed());
    }

    @Test
    @Order(2)
    void shouldShowABacklogAndABlockedQueueWithItsReason() throws Exception {
        producerConnection = fixture.connect("ops", "s3cret");
        producerConnection.declareQueue("jobs", QueueSettings.EMPTY);
        try (Producer p = producerConnection.createProducer("jobs", ProducerOptions.DEFAULT)) {
            for (int i = 0; i < 7; i++) {
                p.send(("job " + i).getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(10));
            }
        }
        producerConnection.declareQueue("orders", QueueSettings.builder().set(QueueSettings.QUOTA_HARD_MESSAGES, 5).build());
        Producer orders = producerConnection.createProducer("orders", ProducerOptions.DEFAULT);
        for (int i = 0; i < 5; i++) {
            orders.send(("order " + i).getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(10));
        }
        heldByQuota = orders.sendAsync("order 5".getBytes(StandardCharsets.UTF_8));

        assertEquals("7", await("backlog 7 on jobs", d -> text(d, "tr[data-queue='jobs'] td.backlog", "7")));
        assertEquals("BLOCKED", await("BLOCKED on orders", d -> text(d, "tr[data-queue='orders'] .badge", "BLOCKED")));
        String reason = browser.findElement(By.cssSelector("tr[data-queue='orders'] .flow-reason")).getText();
        assertTrue(reason.contains("hard quota") && reason.contains("5"), reason);
        assertEquals("FREE", browser.findElement(By.cssSelector("tr[data-queue='jobs'] .badge")).getText());
        assertEquals("5", browser.findElement(By.cssSelector("tr[data-queue='orders'] td.backlog")).getText());
        assertFalse(heldByQuota.isDone(), "the sixth order waits while the queue is blocked");
        await("the producer of orders in the producers table", d -> text(d, "#producers tr[data-queue='orders'] .badge", "BLOCKED"));

        screenshot("console.png");
    }

    /** Saves what the browser shows as target/console/{@code name}. */
    private void screenshot(String name) throws Exception {
        Path shot = Path.of("target", "console", name);
        Files.createDirectories(shot.getParent());
        File taken = ((ChromeDriver) browser).getScreenshotAs(OutputType.FILE);
        Files.copy(taken.toPath(), shot, StandardCopyOption.REPLACE_EXISTING);
        assertTrue(Files.size(shot) > 0);
    }

    @Test
    @Order(3)
    void shouldShowAQueuePageAndPurgeOnlyAfterConfirmation() throws Exception {
        browser.findElement(By.cssSelector("tr[data-queue='jobs'] td.name a")).click();
        await("the queue page of jobs", d -> text(d, "#queue-name", "jobs"));
        await("the settings", d -> displayed(d, By.cssSelector("#settings")));
        String settings = browser.findElement(By.id("settings")).getText();
        // The quota and policy as the API reports them (quotaHardBytes, overflowPolicy), not blank.
        assertTrue(settings.contains("Hard quota") && settings.contains("block") && !settings.contains("none / none"), settings);
        String line = await("a chart line of the backlog", d -> d.findElements(By.cssSelector("svg.chart polyline.series-backlog"))
                .stream().map(e -> e.getAttribute("points")).filter(points -> points != null && points.contains(" ")).findFirst()
                .orElse(null));
        assertTrue(line.split(" ").length >= 2, "at least two polls drawn: " + line);
        screenshot("queue.png");

        browser.findElement(By.id("purge")).click();
        String question = await("the confirmation", d -> displayed(d, By.cssSelector("#confirmation .confirmation"))).getText();
        assertTrue(question.contains("jobs") && question.contains("7"), question);
        browser.findElement(By.id("cancel")).click();
        assertEquals(7, backlog("jobs"), "cancelled: nothing purged");

        browser.findElement(By.id("purge")).click();
        await("the confirm button", d -> displayed(d, By.id("confirm-purge"))).click();
        String said = await("the purge notice", d -> text(d, "#notice", "Purged 7 messages from queue \u2018jobs\u2019."));
        assertTrue(said.startsWith("Purged"));
        assertEquals(0, backlog("jobs"));
    }

    @Test
    @Order(4)
    void shouldShowAMonitorOnlyUserItsQueueAndTheRefusalOfAPurge() {
        browser.findElement(By.id("logout")).click();
        await("the login form", d -> displayed(d, By.id("login")));
        logIn("watcher", "s3cret");
        await("the queue page again", d -> text(d, "#queue-name", "jobs"));
        browser.findElement(By.id("purge")).click();
        await("the confirm button", d -> displayed(d, By.id("confirm-purge"))).click();
        String refusal = await("the refusal", d -> {
            WebElement notice = d.findElement(By.id("notice"));
            return notice.isDisplayed() && notice.getText().contains("may not") ? notice.getText() : null;
        });
        assertTrue(refusal.contains("watcher") && refusal.contains("manage") && refusal.contains("jobs"), refusal);

        browser.findElement(By.linkText("\u2190 all queues")).click();
        await("jobs in the table", d -> displayed(d, By.cssSelector("tr[data-queue='jobs']")));
        List<WebElement> rows = browser.findElements(By.cssSelector("#queues tbody tr"));
        assertEquals(1, rows.size(), "watcher sees only jobs, not orders");
    }

    private void logIn(String user, String password) {
        WebElement name = browser.findElement(By.id("login-user"));
        name.clear();
        name.sendKeys(user);
        WebElement secret = browser.findElement(By.id("login-password"));
        secret.clear();
        secret.sendKeys(password);
        // a previous refusal would otherwise answer the wait for this attempt's
        ((JavascriptExecutor) browser).executeScript("document.getElementById('login-error').textContent = ''");
        browser.findElement(By.id("login-submit")).click();
    }

    private long backlog(String queue) {
        return fixture.broker.queues().get(queue).store().unackedMessages();
    }

    private static WebElement displayed(WebDriver d, By by) {
        List<WebElement> found = d.findElements(by);
        return !found.isEmpty() && found.get(0).isDisplayed() ? found.get(0) : null;
    }

    /** The text of the first element matching {@code css} once it equals {@code expected}, else null. */
    private static String text(WebDriver d, String css, String expected) {
        List<WebElement> found = d.findElements(By.cssSelector(css));
        return !found.isEmpty() && found.get(0).getText().equals(expected) ? expected : null;
    }

    private <T> T await(String what, ExpectedCondition<T> condition) {
        try {
            return new WebDriverWait(browser, WAIT).ignoring(org.openqa.selenium.StaleElementReferenceException.class)
                    .until(condition);
        } catch (TimeoutException e) {
            throw new AssertionError("the console did not show " + what + " within " + WAIT.toSeconds() + " s; the page said:\n"
                    + browser.findElement(By.tagName("body")).getText(), e);
        }
    }
}
