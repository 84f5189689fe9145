// The training job as a library. Browser-safe: file and process I/O live in "@ragen/trainer/node".
export {
  type APOSettings,
  EMBEDDED_MODEL,
  type FieldSpec,
  LIBRARY_DEFAULTS,
  type RolloutSettings,
  SECTIONS,
  SETTINGS_FIELDS,
  type SectionName,
  type SettingsLayer,
  type StarPOSettings,
  settingsFields,
  type TrainingSettings,
} from "./settings/fields.js";
export {
  ALGORITHM_PROFILES,
  isProfileName,
  PROFILES,
  type Profile,
  type ProfileName,
  SMALL_MODEL_PARAMETERS,
  SMALL_MODEL_PROFILE,
} from "./settings/profiles.js";
export {
  type ResolvedSettings,
  resolveSettings,
  type SettingSource,
  type SettingsFile,
  type SettingsInput,
} from "./settings/resolve.js";
export {
  describeProfiles,
  describeSettings,
  formatResolvedSettings,
  settingsSchema,
} from "./settings/schema.js";
