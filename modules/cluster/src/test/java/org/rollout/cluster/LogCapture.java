package org.rollout.cluster;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.LoggerFactory;

/**
 * Collects the WARN and ERROR events of every logger (Pekko's go through SLF4J) while open: what
 * tests assert about logged refusals. Thread-safe.
 */
final class LogCapture extends AppenderBase<ILoggingEvent> implements AutoCloseable {
    private final List<ILoggingEvent> events = new CopyOnWriteArrayList<>();
    private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);

    LogCapture() {
        setName("test-capture");
        setContext(root.getLoggerContext());
        start();
        root.addAppender(this);
    }

    @Override
    protected void append(ILoggingEvent e) {
        if (e.getLevel().isGreaterOrEqual(Level.WARN)) {
            events.add(e);
        }
    }

    /** Error events whose message, or whose exception's message, contains {@code text}. */
    List<String> errorsContaining(String text) {
        return events.stream()
                .filter(e -> e.getLevel() == Level.ERROR)
                .map(LogCapture::render)
                .filter(s -> s.contains(text))
                .toList();
    }

    /** Warning events whose message, or whose exception's message, contains {@code text}. */
    List<String> warningsContaining(String text) {
        return events.stream()
                .filter(e -> e.getLevel() == Level.WARN)
                .map(LogCapture::render)
                .filter(s -> s.contains(text))
                .toList();
    }

    private static String render(ILoggingEvent e) {
        String s = e.getFormattedMessage();
        for (var t = e.getThrowableProxy(); t != null; t = t.getCause()) {
            s += " | " + t.getClassName() + ": " + t.getMessage();
        }
        return s;
    }

    @Override
    public void close() {
        root.detachAppender(this);
        stop();
    }
}
