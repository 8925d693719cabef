// Sample booking messages: the lab's acceptance-test messages, verbatim (offvia-streaming-lab, "Test con Eventi
// Validi e Non Validi"), with where each must end. `npm run demo` publishes them and checks more (Bronze, gold).
import type { PipelineSample } from '../../pipeline/definition';

/** The lab's three messages; fixed texts (the lab's own event times), so `nowMs` is not used. */
export function bookingSamples(): readonly PipelineSample[] {
  return [
    {
      description: 'a valid booking',
      data: '{"booking_id":"BK-90210","passenger_id":"PAX-4821","flight_number":"OF-104","origin":"JFK","destination":"LHR","fare":"749.50","currency":"USD","status":"CONFIRMED","event_time":"2026-10-07T14:10:00Z"}',
      attributes: {},
      expect: { layer: 'silver' },
    },
    {
      description: 'a negative fare',
      data: '{"booking_id":"BK-90211","passenger_id":"PAX-7712","flight_number":"OF-208","origin":"SFO","destination":"HND","fare":"-50.00","event_time":"2026-10-07T14:10:05Z"}',
      attributes: {},
      expect: { layer: 'quarantine', stage: 'BUSINESS_RULE_VALIDATION' },
    },
    {
      description: 'broken JSON',
      data: '{"booking_id":"BK-90212", "unclosed_json...',
      attributes: {},
      expect: { layer: 'quarantine', stage: 'PARSE_JSON' },
    },
  ];
}
